//! Alarm latency (`bench/alarms.sh`): value → alarm event through svc's alarm evaluation. One
//! subscriber of `--alarm-filter` connects first; one publisher paced at `--rate` crossings/s
//! (1 ms tokio interval, a late tick sends a bigger batch) sets a random topic of
//! `<prefix>/p<i>/t<k>` to `--crossing-base` + n (crossing n's value, above every setpoint) and
//! `--reset-ms` later back to 0 (so the topic can cross again). The event svc raises carries
//! the value, which names the crossing: latency = event receipt − crossing publish, over the
//! crossings sent after `--warmup-ms`. A crossing on a topic whose alarm still stands (another
//! crossing landed there within the reset time) raises no event: counted as missing.
//! Retained events (an earlier run's) are ignored; both sockets get TCP_NODELAY.

use crate::args::Args;
use crate::client::{connected, drive_publisher, now_ns, options, payload};
use crate::latency::{number_after, percentile_us};
use crate::system::nodelay_all_tcp_sockets;
use rumqttc::{AsyncClient, Event, Packet};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::MissedTickBehavior;

/// A xorshift64 step: the generator needs spread-out topics, not good randomness.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let topics: Vec<String> = (0..args.publishers.max(1))
        .flat_map(|p| crate::fan_in::topics_of(&args.prefix, p, args.topics))
        .collect();
    let (total, warmup) = args.paced_messages();
    // Crossing n's publish time ([`now_ns`]) and its event's arrival; 0 until then.
    let sent: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let arrived: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let events = Arc::new(AtomicU64::new(0));

    let (sub_client, mut sub_loop) =
        AsyncClient::new(options(&args, "bench-alarm-subscriber"), 1_000);
    sub_client
        .subscribe(&args.alarm_filter, args.sub_qos())
        .await
        .map_err(|e| format!("alarm subscriber: {e}"))?;
    loop {
        match tokio::time::timeout(Duration::from_secs(30), sub_loop.poll()).await {
            Ok(Ok(Event::Incoming(Packet::SubAck(_)))) => break,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("alarm subscriber: {e}")),
            Err(_) => return Err("alarm subscriber: no SUBACK within 30 s".into()),
        }
    }
    {
        let (base, arrived, events) = (args.crossing_base, arrived.clone(), events.clone());
        tokio::spawn(async move {
            let _client = sub_client; // keeps the event loop's request channel open
            loop {
                match sub_loop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) if !p.retain => {
                        let at = now_ns();
                        events.fetch_add(1, Ordering::Relaxed);
                        let Some(value) = number_after(&p.payload, "value") else {
                            continue;
                        };
                        let n = value.wrapping_sub(base) as usize;
                        if value >= base && n < arrived.len() {
                            // The first event of a crossing is the one it raised.
                            let _ = arrived[n].compare_exchange(
                                0,
                                at,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("alarm subscriber: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
    }

    let id = "bench-alarm-publisher";
    let (client, mut event_loop) = AsyncClient::new(options(&args, id), 10_000);
    connected(&mut event_loop)
        .await
        .map_err(|e| format!("{id}: cannot connect: {e}"))?;
    nodelay_all_tcp_sockets()?;
    let start = now_ns();
    let sender = {
        let (pace, qos, size, base) = (args.clone(), args.qos, args.size, args.crossing_base);
        let reset_ns = args.reset_ms * 1_000_000;
        let sent = sent.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
            let mut random = 0x9E37_79B9_7F4A_7C15_u64 ^ start;
            let mut resets: VecDeque<(u64, usize)> = VecDeque::new();
            let mut n = 0;
            'pacing: while n < total || !resets.is_empty() {
                tick.tick().await;
                let elapsed = now_ns() - start;
                while resets.front().is_some_and(|(due, _)| *due <= elapsed) {
                    let (_, topic) = resets.pop_front().expect("just looked");
                    let body = payload(0, None, size);
                    if client
                        .publish(&topics[topic], qos, false, body)
                        .await
                        .is_err()
                    {
                        break 'pacing;
                    }
                }
                let due = pace.due_by(elapsed, total);
                while n < due {
                    let topic = (next_random(&mut random) % topics.len() as u64) as usize;
                    sent[n as usize].store(now_ns(), Ordering::Relaxed);
                    let body = payload((base + n) as usize, None, size);
                    if client
                        .publish(&topics[topic], qos, false, body)
                        .await
                        .is_err()
                    {
                        break 'pacing;
                    }
                    resets.push_back((now_ns() - start + reset_ns, topic));
                    n += 1;
                }
            }
            client
        })
    };
    // Every crossing and its reset.
    drive_publisher(id, &mut event_loop, args.qos, 2 * total as usize, sender).await;
    // The last events: their crossings were sent reset_ms ago at least.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut samples = Vec::with_capacity((total - warmup) as usize);
    for n in warmup..total {
        let (s, a) = (
            sent[n as usize].load(Ordering::Relaxed),
            arrived[n as usize].load(Ordering::Relaxed),
        );
        if s > 0 && a > 0 {
            samples.push(a.saturating_sub(s));
        }
    }
    samples.sort_unstable();
    let measured = total - warmup;
    Ok(format!(
        "{{\"sent\":{total},\"crossings\":{measured},\"events\":{},\"samples\":{},\
         \"missing\":{},\"p50_us\":{:.0},\"p99_us\":{:.0},\"max_us\":{:.0},\"seconds\":{:.3}}}",
        events.load(Ordering::Relaxed),
        samples.len(),
        measured - samples.len() as u64,
        percentile_us(&samples, 0.50),
        percentile_us(&samples, 0.99),
        percentile_us(&samples, 1.0),
        (now_ns() - start) as f64 / 1e9,
    ))
}
