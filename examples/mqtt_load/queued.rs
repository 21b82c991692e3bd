//! Queued: what a broker holds for a subscriber that is away. A persistent subscriber
//! (MQTT 3.1.1, clean session off) subscribes to `<prefix>/queued` at the subscriber QoS and
//! disconnects; one publisher sends `--messages` M there (acknowledged at QoS 1/2), and the
//! broker keeps them for the subscriber. With `--broker-pid`, the broker's VmRSS once steady
//! before the publisher and with the queue gives its memory per queued message. The subscriber
//! then comes back, takes every message (received, lost) and leaves with a clean session, so
//! nothing stays behind for the next load.

use crate::args::Args;
use crate::client::{connected, disconnect, now_ns, options, publish_burst, STALL};
use crate::system::{bytes_each, kb_or_null, steady_rss};
use rumqttc::{AsyncClient, Event, EventLoop, Packet};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

const SUBSCRIBER: &str = "bench-queued-subscriber";

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let topic = format!("{}/queued", args.prefix);
    let (client, mut event_loop) = session(&args, false).await?;
    client
        .subscribe(&topic, args.sub_qos())
        .await
        .map_err(|e| format!("subscribe request: {e}"))?;
    until(&mut event_loop, |e| {
        matches!(e, Event::Incoming(Packet::SubAck(_)))
    })
    .await?;
    disconnect(&client, &mut event_loop).await;

    let before = steady_rss(args.broker_pid).await?;
    let published = publish_burst(
        args.clone(),
        "bench-queued-publisher".into(),
        vec![topic],
        args.messages,
        Arc::new(OnceLock::new()),
    )
    .await;
    let with = steady_rss(args.broker_pid).await?;

    let started = now_ns();
    let (client, mut event_loop) = session(&args, false).await?;
    let received = take_all(&mut event_loop, args.messages).await;
    let seconds = ((now_ns() - started) as f64 / 1e9).max(1e-9);
    disconnect(&client, &mut event_loop).await;
    // A clean session ends the stored one.
    let (client, mut event_loop) = session(&args, true).await?;
    disconnect(&client, &mut event_loop).await;

    let sent = args.messages as u64;
    Ok(format!(
        "{{\"sent\":{sent},\"published\":{published},\"received\":{received},\"lost\":{},\
         \"seconds\":{seconds:.3},\"rss_before_kb\":{},\"rss_with_kb\":{},\
         \"bytes_per_message\":{}}}",
        sent.saturating_sub(received),
        kb_or_null(before),
        kb_or_null(with),
        bytes_each(before, with, sent),
    ))
}

/// The subscriber connected, with its stored session kept (`clean` false) or ended.
async fn session(args: &Args, clean: bool) -> Result<(AsyncClient, EventLoop), String> {
    let mut opts = options(args, SUBSCRIBER);
    opts.set_clean_session(clean);
    let (client, mut event_loop) = AsyncClient::new(opts, 10);
    connected(&mut event_loop)
        .await
        .map_err(|e| format!("{SUBSCRIBER}: {e}"))?;
    Ok((client, event_loop))
}

/// Polls until an event `wanted` matches, or fails after [`STALL`].
async fn until(event_loop: &mut EventLoop, wanted: impl Fn(&Event) -> bool) -> Result<(), String> {
    let deadline = Instant::now() + STALL;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, event_loop.poll()).await {
            Ok(Ok(event)) if wanted(&event) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("{SUBSCRIBER}: {e}")),
            Err(_) => return Err(format!("{SUBSCRIBER}: nothing awaited within {STALL:?}")),
        }
    }
}

/// Counts the deliveries until `expected` arrived or none came for [`STALL`] (the client
/// acknowledges each as it comes).
async fn take_all(event_loop: &mut EventLoop, expected: usize) -> u64 {
    let mut received = 0;
    while received < expected {
        match tokio::time::timeout(STALL, event_loop.poll()).await {
            Ok(Ok(Event::Incoming(Packet::Publish(_)))) => received += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                eprintln!("{SUBSCRIBER}: {e}");
                break;
            }
            Err(_) => break,
        }
    }
    received as u64
}
