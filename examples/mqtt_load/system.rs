//! What the generator asks of the operating system: a file-descriptor limit large enough for
//! thousands of connections, a process's resident memory from `/proc` (once steady), and
//! TCP_NODELAY on its own sockets.

/// Raises the soft RLIMIT_NOFILE to the hard limit (an unprivileged process may), and fails when
/// even that leaves fewer than `needed` descriptors.
pub fn raise_nofile(needed: u64) -> Result<u64, String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()));
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    let soft: u64 = limit.rlim_cur;
    if soft < needed {
        return Err(format!(
            "RLIMIT_NOFILE is {soft} (hard {}), {needed} needed: raise it (ulimit -Hn) first",
            limit.rlim_max
        ));
    }
    Ok(soft)
}

/// A `kB` line (`VmRSS`, `VmHWM`) of `/proc/<pid>/status`, in kB.
pub fn status_kb(pid: u32, key: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .find_map(|line| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .ok_or_else(|| format!("{path}: no {key} line"))
}

/// Sets TCP_NODELAY on every TCP socket this process has open; returns how many.
///
/// rumqttc 0.24 offers no option for it and keeps its socket private. Without it, Nagle's
/// algorithm holds a QoS 0 publisher's small writes until the broker's delayed ACK (up to 40 ms,
/// since a QoS 0 publisher gets no packets to piggyback the ACK on), and the latency measured is
/// the generator's, not the broker's. Other descriptors (files, epoll, pipes) refuse the option
/// and are skipped.
pub fn nodelay_all_tcp_sockets() -> Result<usize, String> {
    let entries = std::fs::read_dir("/proc/self/fd").map_err(|e| format!("/proc/self/fd: {e}"))?;
    let on: libc::c_int = 1;
    let mut set = 0;
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::c_int>().ok())
        else {
            continue;
        };
        // SAFETY: setsockopt reads `on` for its size and changes only a socket option; on a
        // descriptor that is not a TCP socket it fails and nothing changes.
        let result = unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if result == 0 {
            set += 1;
        }
    }
    Ok(set)
}

/// Reads of VmRSS that must agree (within 256 kB) before it counts as steady: 5 s of them,
/// longer than a broker's periodic return of freed memory (svc: every 2 s), so memory freed
/// by earlier requests and not yet returned is not counted against what
/// is measured (idle connections, queued messages).
const STEADY_READS: usize = 10;
const STEADY_READ_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
/// After this many reads the last one is taken, steady or not.
const MAX_READS: usize = 40;

/// The broker's VmRSS once it is steady (see [`STEADY_READS`]).
pub async fn steady_rss(pid: Option<u32>) -> Result<Option<u64>, String> {
    let Some(pid) = pid else { return Ok(None) };
    let mut window = vec![status_kb(pid, "VmRSS")?];
    for _ in 0..MAX_READS {
        tokio::time::sleep(STEADY_READ_EVERY).await;
        window.push(status_kb(pid, "VmRSS")?);
        if window.len() > STEADY_READS {
            window.remove(0);
        }
        let low = window.iter().min().copied().unwrap_or(0);
        let high = window.iter().max().copied().unwrap_or(0);
        if window.len() == STEADY_READS && high - low <= 256 {
            return Ok(window.last().copied());
        }
    }
    Ok(window.last().copied())
}

/// What each of `items` added to the broker's VmRSS between two reads (kB), in bytes, as JSON:
/// signed, so that on a broker whose memory moves for other reasons noise shows as such;
/// `null` without both reads or items.
pub fn bytes_each(before: Option<u64>, with: Option<u64>, items: u64) -> String {
    match (before, with) {
        (Some(b), Some(w)) if items > 0 => {
            format!("{:.0}", (w as f64 - b as f64) * 1024.0 / items as f64)
        }
        _ => "null".into(),
    }
}

/// A VmRSS read (kB) as JSON: `null` when there is none.
pub fn kb_or_null(read: Option<u64>) -> String {
    read.map_or("null".into(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_resident_memory() {
        let rss = status_kb(std::process::id(), "VmRSS").expect("VmRSS");
        assert!(rss > 0);
        assert!(status_kb(std::process::id(), "NoSuchKey").is_err());
    }

    #[test]
    fn sets_nodelay_on_tcp_sockets_only() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let stream =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (accepted, _) = listener.accept().expect("accept");
        assert!(!stream.nodelay().expect("nodelay"));
        // The two connected sockets at least (the listener accepts the option too on Linux).
        assert!(nodelay_all_tcp_sockets().expect("set") >= 2);
        assert!(stream.nodelay().expect("nodelay"));
        assert!(accepted.nodelay().expect("nodelay"));
    }

    #[test]
    fn a_modest_descriptor_limit_is_available() {
        assert!(raise_nofile(64).expect("limit") >= 64);
        assert!(raise_nofile(u64::MAX).is_err());
    }
}
