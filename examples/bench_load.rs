//! Bulk loader for `bench/run.sh`: creates `COUNT` records in one table of a running `svc serve`
//! through the public REST API (`POST /svc/<table>`), from several threads each holding one
//! keep-alive connection.
//!
//! Record `N` (0-based) is
//! `{"id":"item<N>","sku":"SKU-<N>","line":"line-<N % 1000>","value":N,
//! "tags":["t<N % 1000>","g<N % 7>"],"note":"pump <N % 1000> in hall h<N % 7>"}`, so a filter on
//! one `line`, a `CONTAINSANY` of one `t<M>` tag and an `@@` of `pump <M>` each match
//! `COUNT / 1000` records. A record that already exists (409) counts as loaded,
//! so a rerun on the same data dir is harmless.
//!
//! ```sh
//! cargo run --release --example bench_load -- <base-url> <token> <domain> <table> <count> [threads]
//! ```

use reqwest::blocking::Client;
use reqwest::StatusCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: bench_load <base-url> <token> <domain> <table> <count> [threads]");
        std::process::exit(2);
    }
    let base = args[0].trim_end_matches('/').to_string();
    let token = args[1].clone();
    let domain = args[2].clone();
    let table = args[3].clone();
    let count: usize = args[4].parse().expect("count must be a number");
    let threads: usize = args
        .get(5)
        .map_or(4, |t| t.parse().expect("threads must be a number"));

    let url = Arc::new(format!("{base}/svc/{table}"));
    let auth = Arc::new(format!("Bearer {token}"));
    let domain = Arc::new(format!("domains:{domain}"));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();

    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (url, auth, domain, next) =
                (url.clone(), auth.clone(), domain.clone(), next.clone());
            std::thread::spawn(move || {
                let client = Client::builder()
                    .pool_max_idle_per_host(1)
                    .build()
                    .expect("cannot build HTTP client");
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= count {
                        break;
                    }
                    let (line, hall) = (n % 1000, n % 7);
                    let body = format!(
                        r#"{{"id":"item{n}","sku":"SKU-{n}","line":"line-{line}","value":{n},"tags":["t{line}","g{hall}"],"note":"pump {line} in hall h{hall}"}}"#
                    );
                    let response = client
                        .post(url.as_str())
                        .header("Authorization", auth.as_str())
                        .header("Domain", domain.as_str())
                        .header("Content-Type", "application/json")
                        .body(body)
                        .send()
                        .unwrap_or_else(|e| panic!("POST record {n} failed: {e}"));
                    let status = response.status();
                    if status != StatusCode::CREATED && status != StatusCode::CONFLICT {
                        let text = response.text().unwrap_or_default();
                        panic!("POST record {n}: {status} {text}");
                    }
                    // Drain the body so the connection is reused.
                    let _ = response.bytes();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a loader thread failed");
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "loaded {count} records in {secs:.1}s ({:.0} records/s, {threads} threads)",
        count as f64 / secs
    );
}
