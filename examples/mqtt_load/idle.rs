//! Idle connections: `--connections` clients connect (`--connect-concurrency` handshakes at
//! once, keep alive `--keep-alive` s) and then only answer keep-alives. With `--broker-pid`, the
//! broker's VmRSS is read (once steady) before the first connection and `--settle-ms` after the
//! last CONNACK; the difference over the connections is the broker's memory per idle connection.

use crate::args::Args;
use crate::client::{connected, options};
use crate::system::{bytes_each, kb_or_null, steady_rss};
use futures::stream::{self, StreamExt};
use rumqttc::AsyncClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Attempts per connection: a broker may refuse handshakes beyond its own concurrency limit.
const ATTEMPTS: usize = 3;

/// Connects client `i` and leaves a task polling it; counts it in `dropped` if it closes later.
async fn hold(args: Arc<Args>, i: usize, dropped: Arc<AtomicU64>) -> Result<(), String> {
    let id = format!("bench-idle-{i}");
    let mut last_error = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut opts = options(&args, &id);
        // Small in-flight window and request channel: these clients never publish.
        opts.set_inflight(10);
        opts.set_keep_alive(Duration::from_secs(args.keep_alive_s));
        let (client, mut event_loop) = AsyncClient::new(opts, 1);
        match tokio::time::timeout(Duration::from_secs(30), connected(&mut event_loop)).await {
            Ok(Ok(())) => {
                let dropped = dropped.clone();
                tokio::spawn(async move {
                    let _client = client;
                    // Poll only for keep-alive; the first error means the broker closed it.
                    while event_loop.poll().await.is_ok() {}
                    dropped.fetch_add(1, Ordering::Relaxed);
                });
                return Ok(());
            }
            Ok(Err(e)) => last_error = e,
            Err(_) => last_error = "no CONNACK within 30 s".into(),
        }
    }
    Err(format!("{id}: {last_error}"))
}

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let before = steady_rss(args.broker_pid).await?;
    let dropped = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let results: Vec<Result<(), String>> = stream::iter(0..args.connections)
        .map(|i| hold(args.clone(), i, dropped.clone()))
        .buffer_unordered(args.connect_concurrency)
        .collect()
        .await;
    let connect_seconds = started.elapsed().as_secs_f64();
    let failed = results.iter().filter(|r| r.is_err()).count();
    if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
        eprintln!("idle: {failed} connections failed, first: {e}");
    }
    let connected = args.connections - failed;
    tokio::time::sleep(Duration::from_millis(args.settle_ms)).await;
    let with = steady_rss(args.broker_pid).await?;
    let dropped = dropped.load(Ordering::Relaxed);
    let held = (connected as u64).saturating_sub(dropped);
    Ok(format!(
        "{{\"connections\":{},\"connected\":{connected},\"failed\":{failed},\"dropped\":{dropped},\
         \"held\":{held},\"connect_seconds\":{connect_seconds:.3},\"rss_before_kb\":{},\
         \"rss_with_kb\":{},\"bytes_per_connection\":{}}}",
        args.connections,
        kb_or_null(before),
        kb_or_null(with),
        bytes_each(before, with, held),
    ))
}
