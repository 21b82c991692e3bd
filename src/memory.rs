//! The process's memory: the allocator, and what keeps a server that runs for years on a small
//! box from holding memory it does not use (no transparent huge pages, freed memory given
//! back to the system).

use std::time::Duration;

// The server allocates many short-lived buffers per request; mimalloc serves them faster and
// returns memory to the system more readily than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How often memory the allocator holds freed is given back.
const ALLOCATOR_UPKEEP_EVERY: Duration = Duration::from_secs(2);

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e`, mimalloc v3's
/// `include/mimalloc.h`; libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Has freed pages given back to the system as soon as they are free, not a second later
/// (mimalloc v3's default), first thing in `main`.
///
/// A gateway's steady work frees in waves (a historian fold every few seconds, a publish of
/// 500 values): with the delay, each wave's pages were still resident when the next came.
/// Measured with bench/connectors.sh (10,000 OPC UA and 2,000 Modbus points): 114 MB
/// resident at the window's end, 79 MB without the delay, with the same CPU time.
pub fn give_back_freed_pages_at_once() {
    // SAFETY: mi_option_set only stores the option's value.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// Opts the process out of transparent huge pages (as Redis and most databases advise); first
/// thing in `main`, before the allocator's arenas see much use.
///
/// The allocator reserves large arenas and asks for huge pages on them; the kernel then backs
/// a few touched bytes with 2 MiB pages (measured: 26 MB of a fresh server's 43 MB resident
/// memory), and collapsing or splitting those pages later stalls the thread that faults. A
/// server whose working set is many small objects gains nothing from them.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE only reads its integer arguments and sets a flag of the
        // calling process.
        let result = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "cannot opt out of transparent huge pages"
            );
        }
    }
}

/// Gives back what this thread freed, when it goes idle and did not do so in the last
/// [`ALLOCATOR_UPKEEP_EVERY`] (tokio's `on_thread_park`: a worker parks whenever it has nothing
/// to run, thousands of times a second under load, so the pass is rate-limited per thread).
///
/// Memory a worker frees (the tasks and socket registrations of connections that parked, the
/// buffers of a burst) waits in that worker's own heap until the worker allocates again; the
/// periodic pass of [`spawn_allocator_upkeep`] runs on one thread and does not reach it.
pub fn collect_when_idle() {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    let due = LAST.with(|last| {
        let due = last
            .get()
            .is_none_or(|at| now.duration_since(at) >= ALLOCATOR_UPKEEP_EVERY);
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        collect(false);
    }
}

/// Gives back, now, what the calling thread freed: after an argon2 hash, whose 19 MB the
/// allocator otherwise keeps (its return is delayed until the thread allocates again, and a
/// blocking thread that hashed a password may not): a fresh server held 45 MB resident
/// instead of 28.
pub fn give_back_freed() {
    // Forced: the delayed returns happen now.
    collect(true);
}

/// One pass of the allocator's collection for the calling thread (and its arenas' pending
/// returns; `force` runs the delayed ones now).
fn collect(force: bool) {
    // SAFETY: mi_collect only walks the allocator's own structures; it may be called from any
    // thread at any time.
    unsafe { libmimalloc_sys::mi_collect(force) };
}

/// Gives freed memory back to the system every few seconds.
///
/// mimalloc returns freed memory after a short delay, but only when some thread allocates
/// again in that arena; memory freed by a thread that then goes quiet (a password hash's
/// 19 MB on a blocking thread, a burst of connection buffers) stays resident for good. One
/// collect pass runs those overdue returns whatever thread freed the memory.
///
/// It also wakes the other workers: a worker that went to sleep right after a burst (10,000
/// clients connecting, then parking) skipped its rate-limited collection in
/// [`collect_when_idle`] and, with nothing to do, would sleep on with the burst's freed memory
/// in its heap (measured: 450 bytes per idle client, 4.5 MB for 10,000). A task for each
/// worker to steal wakes it; it parks again at once and collects then.
pub fn spawn_allocator_upkeep() {
    tokio::spawn(async {
        let workers = tokio::runtime::Handle::current().metrics().num_workers();
        let mut every = tokio::time::interval(ALLOCATOR_UPKEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            collect(false);
            for _ in 0..workers {
                tokio::spawn(async {});
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // SAFETY: reading and setting an option only touches mimalloc's option table.
        let (default, set) = unsafe {
            let default = libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY);
            give_back_freed_pages_at_once();
            (
                default,
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        // mimalloc v3's default purge delay is 1,000 ms: no neighbouring option has it (nothing
        // else in the unit tests sets it).
        assert_eq!(
            default, 1_000,
            "option {MI_OPTION_PURGE_DELAY} is not the purge delay"
        );
        assert_eq!(set, 0);
    }
}
