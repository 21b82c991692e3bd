//! Parking for quiet plain-TCP clients: 10,000 devices that publish once a minute are a normal
//! plant, and each would otherwise keep a tokio task and a slot in tokio's reactor while it says
//! nothing. A parked connection is its socket, registered with one epoll instance of the
//! broker's own, and its client state, in a slot; no task, no reactor slot, no waker node.
//!
//! A connection parks itself (the hub asks it once the client has been quiet for
//! [`QUIET_MS`] both ways, and it agrees only with nothing half-read). It comes back, as a new
//! task with a fresh reactor registration, when its socket becomes readable (bytes, a close, an
//! error) or when its queue gets an item or a kick: the queue's waker is a [`Waker`] naming the
//! parked entry, so whatever would have woken the task brings the connection back instead.
//! TLS and WebSocket connections are not parked (their library state is not a bare socket).

use super::slots::{Key, Slots};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

/// A client quiet this long (nothing read, nothing written) is asked to park.
pub const QUIET_MS: i64 = 2_000;

/// What a parked connection is besides its socket: it knows how to serve the socket again.
pub trait Resume: Send {
    /// Serves `stream` again, in a new task on `runtime`.
    fn resume(self: Box<Self>, stream: std::net::TcpStream, runtime: &tokio::runtime::Handle);
}

struct Parked {
    stream: mio::net::TcpStream,
    client: Box<dyn Resume>,
}

/// Every parked connection of the process, and the epoll instance their sockets are in.
struct Lot {
    /// A slot's key is its connection's epoll token and waker data. Keys are never reused,
    /// so a late wake-up for a connection that came back already finds nothing instead of
    /// waking another one.
    parked: Mutex<Slots<Parked>>,
    registry: mio::Registry,
    /// The runtime connections come back on: the one of the first connection that parked
    /// (`svc serve` has one).
    runtime: tokio::runtime::Handle,
}

static LOT: OnceLock<Option<Lot>> = OnceLock::new();
/// Parked connections brought back so far (for `GET /metrics`).
static RESUMED: AtomicU64 = AtomicU64::new(0);

/// The lot, with its thread started on first use (from within the runtime); None when the
/// system refused an epoll instance or a thread (connections then stay unparked).
fn lot() -> Option<&'static Lot> {
    LOT.get_or_init(|| match start() {
        Ok(lot) => Some(lot),
        Err(e) => {
            tracing::warn!(error = %e, "quiet MQTT connections cannot be parked");
            None
        }
    })
    .as_ref()
}

fn start() -> io::Result<Lot> {
    let poll = mio::Poll::new()?;
    let registry = poll.registry().try_clone()?;
    std::thread::Builder::new()
        .name("mqtt-parking".into())
        .spawn(move || watch(poll))?;
    Ok(Lot {
        parked: Mutex::new(Slots::default()),
        registry,
        runtime: tokio::runtime::Handle::current(),
    })
}

/// The lot's thread: brings back every connection whose socket became readable.
fn watch(mut poll: mio::Poll) {
    let mut events = mio::Events::with_capacity(1024);
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::error!(error = %e, "waiting for parked MQTT connections failed");
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        }
        for event in events.iter() {
            unpark(event.token().0 as Key);
        }
    }
}

impl Lot {
    fn lock(&self) -> MutexGuard<'_, Slots<Parked>> {
        // Every change is one reserve, fill, take or release: a panic cannot leave it
        // half-made.
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection about to park: its reserved slot (released if it does not park), and the
/// waker its queue should use from now on.
pub struct Ticket {
    key: Key,
}

impl Ticket {
    /// None when parking is not available on this system.
    pub fn new() -> Option<Ticket> {
        let key = lot()?.lock().reserve()?;
        Some(Ticket { key })
    }

    /// Wakes nothing but brings the parked connection back. Hand it to the queue BEFORE
    /// parking: once parked, another thread may bring the connection back at any moment, and
    /// a registration after that would steal the new task's wake-ups.
    pub fn waker(&self) -> Waker {
        // SAFETY: the data is a plain integer (the slot's key), never dereferenced, and
        // every function of the vtable is safe for any value of it.
        unsafe {
            Waker::from_raw(RawWaker::new(
                std::ptr::without_provenance(self.key as usize),
                &VTABLE,
            ))
        }
    }

    /// Parks `client` with its socket. `pending` is asked once the connection can be brought
    /// back: a wake-up between [`Ticket::waker`] and now found nothing to bring back, so what
    /// it announced must be looked for here.
    pub fn park(
        self,
        stream: std::net::TcpStream,
        client: Box<dyn Resume>,
        pending: impl FnOnce() -> bool,
    ) {
        let Some(lot) = lot() else {
            client.resume(stream, &tokio::runtime::Handle::current());
            return;
        };
        let mut stream = mio::net::TcpStream::from_std(stream);
        {
            // Registered under the lock: a readiness event for it waits for the entry.
            let mut parked = lot.lock();
            let token = mio::Token(self.key as usize);
            if let Err(e) = lot
                .registry
                .register(&mut stream, token, mio::Interest::READABLE)
            {
                drop(parked);
                tracing::debug!(error = %e, "an MQTT connection could not be parked");
                client.resume(stream.into(), &lot.runtime);
                return;
            }
            if let Err(Parked { mut stream, client }) =
                parked.fill(self.key, Parked { stream, client })
            {
                // Cannot happen: the ticket holds the reservation until it is dropped.
                drop(parked);
                let _ = lot.registry.deregister(&mut stream);
                client.resume(stream.into(), &lot.runtime);
                return;
            }
        }
        if pending() {
            unpark(self.key);
        }
    }
}

impl Drop for Ticket {
    /// Frees the reserved slot of a connection that did not park (a no-op once it parked).
    fn drop(&mut self) {
        if let Some(lot) = LOT.get().and_then(Option::as_ref) {
            lot.lock().release(self.key);
        }
    }
}

/// Brings the connection parked in slot `key` back, if it is still parked.
fn unpark(key: Key) {
    let Some(lot) = LOT.get().and_then(Option::as_ref) else {
        return;
    };
    let Some(Parked { mut stream, client }) = lot.lock().take(key) else {
        return;
    };
    RESUMED.fetch_add(1, Ordering::Relaxed);
    // A failed deregistration leaves nothing behind: the socket leaves the epoll set when it
    // is closed, and its key is never used again.
    let _ = lot.registry.deregister(&mut stream);
    client.resume(stream.into(), &lot.runtime);
}

/// Connections parked now (for `GET /metrics`).
pub fn parked() -> usize {
    LOT.get()
        .and_then(Option::as_ref)
        .map_or(0, |lot| lot.lock().len())
}

/// Parked connections brought back so far (for `GET /metrics`).
pub fn resumed() -> u64 {
    RESUMED.load(Ordering::Relaxed)
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_waker, wake, wake, drop_waker);

fn clone_waker(key: *const ()) -> RawWaker {
    RawWaker::new(key, &VTABLE)
}

fn wake(key: *const ()) {
    unpark(key.addr() as Key);
}

fn drop_waker(_: *const ()) {}
