//! Latency: one subscriber of `<prefix>/latency` connects first, then one publisher sends there
//! at a fixed rate (`--rate` msgs/s, in batches on a 1 ms tokio interval) for `--warmup-ms` plus
//! `--duration-ms`. Each payload carries its send time; the subscriber records
//! deliver − send for the messages sent after the warm-up, and the run prints p50, p99 and max.
//! Both clients' sockets get TCP_NODELAY, so the generator adds no Nagle delay of its own.

use crate::args::Args;
use crate::client::{
    connected, delivery_seconds, drive_publisher, now_ns, options, payload, subscribe, Deliveries,
};
use crate::system::nodelay_all_tcp_sockets;
use rumqttc::AsyncClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::MissedTickBehavior;

/// The unsigned integer after `"key":` in a JSON payload this generator wrote.
pub fn number_after(payload: &[u8], key: &str) -> Option<u64> {
    let needle = format!("\"{key}\":");
    let at = payload
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())?
        + needle.len();
    let digits = payload[at..].iter().take_while(|b| b.is_ascii_digit());
    let mut n: u64 = 0;
    let mut any = false;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        any = true;
    }
    any.then_some(n)
}

/// The value at quantile `q` (nearest rank) of sorted `samples`, in microseconds.
pub fn percentile_us(samples: &[u64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1] as f64 / 1e3
}

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let topic = format!("{}/latency", args.prefix);
    let (total, warmup) = args.paced_messages();
    let deliveries = Arc::new(Deliveries::default());
    let samples = Arc::new(Mutex::new(Vec::with_capacity((total - warmup) as usize)));
    {
        let samples = samples.clone();
        let on_publish = move |body: &[u8]| {
            let arrived = now_ns();
            let (Some(n), Some(sent)) =
                (number_after(body, "value"), number_after(body, "sent_ns"))
            else {
                return;
            };
            if n >= warmup {
                if let Ok(mut samples) = samples.lock() {
                    samples.push(arrived.saturating_sub(sent));
                }
            }
        };
        let qos = args.sub_qos();
        subscribe(
            &args,
            "bench-latency-subscriber",
            &topic,
            qos,
            deliveries.clone(),
            on_publish,
        )
        .await?;
    }

    let id = "bench-latency-publisher";
    let (client, mut event_loop) = AsyncClient::new(options(&args, id), 10_000);
    connected(&mut event_loop)
        .await
        .map_err(|e| format!("{id}: cannot connect: {e}"))?;
    // Both clients are connected: no Nagle delay on their writes (see the function's doc).
    nodelay_all_tcp_sockets()?;
    let start = now_ns();
    let sent_done = Arc::new(AtomicU64::new(0));
    let sender = {
        let (pace, qos, size, sent_done) = (args.clone(), args.qos, args.size, sent_done.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
            let mut sent = 0;
            'pacing: while sent < total {
                tick.tick().await;
                let elapsed = now_ns() - start;
                let due = pace.due_by(elapsed, total);
                while sent < due {
                    let body = payload(sent as usize, Some(now_ns()), size);
                    if client.publish(&topic, qos, false, body).await.is_err() {
                        break 'pacing;
                    }
                    sent += 1;
                }
            }
            sent_done.store(now_ns(), Ordering::Relaxed);
            client
        })
    };
    drive_publisher(id, &mut event_loop, args.qos, total as usize, sender).await;
    deliveries.wait_for(total).await;

    let publish_seconds = (sent_done.load(Ordering::Relaxed).saturating_sub(start)) as f64 / 1e9;
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(report(total, &deliveries, start, publish_seconds, samples))
}

/// The run's JSON line: counts, rates, and the percentiles of `samples` (ns).
pub fn report(
    total: u64,
    deliveries: &Deliveries,
    start: u64,
    publish_seconds: f64,
    mut samples: Vec<u64>,
) -> String {
    let got = deliveries.received();
    let seconds = delivery_seconds(start, deliveries);
    samples.sort_unstable();
    format!(
        "{{\"sent\":{total},\"published\":{total},\"received\":{got},\"lost\":{},\
         \"seconds\":{seconds:.3},\"msgs_per_s\":{:.0},\"publish_seconds\":{publish_seconds:.3},\
         \"send_rate\":{:.0},\"samples\":{},\"p50_us\":{:.0},\"p99_us\":{:.0},\"max_us\":{:.0}}}",
        total.saturating_sub(got),
        got as f64 / seconds,
        total as f64 / publish_seconds.max(1e-9),
        samples.len(),
        percentile_us(&samples, 0.50),
        percentile_us(&samples, 0.99),
        percentile_us(&samples, 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_numbers_it_wrote() {
        let body = payload(41, Some(123_456_789), 64);
        assert_eq!(body.len(), 64);
        assert_eq!(number_after(&body, "value"), Some(41));
        assert_eq!(number_after(&body, "sent_ns"), Some(123_456_789));
        assert_eq!(number_after(&body, "missing"), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<u64> = (1..=100).map(|n| n * 1_000).collect();
        assert_eq!(percentile_us(&samples, 0.5), 50.0);
        assert_eq!(percentile_us(&samples, 0.99), 99.0);
        assert_eq!(percentile_us(&samples, 1.0), 100.0);
        assert_eq!(percentile_us(&[], 0.99), 0.0);
    }
}
