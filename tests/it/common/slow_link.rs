//! A slow link: a TCP relay on a free loopback port that carries every byte to a real server
//! and back, each way delayed by a fixed time (as a WAN between an edge and its plant), in
//! order. For tests whose outcome depends on what happens while packets are on the way.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The relay; stops taking connections when dropped (open ones end with their peers).
pub struct SlowLink {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl SlowLink {
    /// Relays connections to `127.0.0.1:target`, each byte `delay` late each way.
    pub fn to(target: u16, delay: Duration) -> SlowLink {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the slow link");
        let port = listener.local_addr().expect("local address").port();
        listener.set_nonblocking(true).expect("non-blocking accept");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).expect("blocking stream");
                        match TcpStream::connect(("127.0.0.1", target)) {
                            Ok(server) => relay_both_ways(client, server, delay),
                            Err(_) => drop(client),
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        SlowLink { port, stop }
    }
}

impl Drop for SlowLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn relay_both_ways(client: TcpStream, server: TcpStream, delay: Duration) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_in, server_in) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    relay(client_in, server, delay);
    relay(server_in, client, delay);
}

/// Carries what `from` sends to `to`, each chunk `delay` after it was read; the end of
/// `from` ends `to`'s write side.
fn relay(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if chunks
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        while let Ok((at, chunk)) = due.recv() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
