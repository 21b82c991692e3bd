//! MQTT load generator for `bench/broker.sh` (rumqttc). Each run prints one JSON line; the mode
//! (`--mode`, default `fan-in`) decides what is measured:
//!
//! - `fan-in`: one `<prefix>/#` subscriber connects first, then `--publishers` N each send
//!   `--messages` M to `<prefix>/p<i>` concurrently. It waits until every message arrived or
//!   nothing arrived for 5 s, and prints sent, published, received, lost, seconds (first publish
//!   to last delivery), msgs_per_s (delivered), publish_seconds (first publish until every
//!   publisher is done: at QoS 1 a publisher is done when all its PUBACKs are in).
//! - `fan-in-raw`: the `fan-in` load (MQTT 3.1.1, at most 1,000 unacknowledged QoS 1 messages
//!   per publisher) with packets encoded before the first is sent, written as many at once as
//!   the window allows, and no client event loop, so the generator's CPU per message is a
//!   fraction of the broker's; same JSON line.
//! - `fan-out`: `--subscribers` N subscribe to `<prefix>/fanout`, then one publisher sends M
//!   there; sent = M × N deliveries expected, published = M, the rest as fan-in.
//! - `latency`: one subscriber of `<prefix>/latency`, one publisher paced at `--rate` msgs/s for
//!   `--warmup-ms` + `--duration-ms`; adds p50_us, p99_us, max_us (publish → deliver, over the
//!   messages sent after the warm-up), samples and send_rate (the rate actually sent).
//! - `idle`: `--connections` N held open (keep alive `--keep-alive` s); with `--broker-pid`,
//!   rss_before_kb, rss_with_kb and bytes_per_connection of that broker.
//! - `drain`: one subscriber of `<sub prefix>/#` prints `subscribed` on stderr once its SUBACK
//!   is in, waits for `--messages` M sent by someone else (or 5 s of silence) and prints
//!   received and the wall-clock times (ms since the epoch) of the first and last delivery.
//! - `alarm-latency`: one subscriber of `--alarm-filter` (svc's `$SYS/svc/alarms/<domain>/#`),
//!   one publisher paced at `--rate` crossings/s: each sets a random topic of
//!   `<prefix>/p<i>/t<k>` (`--publishers` × `--topics`) to `--crossing-base` + its sequence
//!   number (above every alarm's setpoint) and, `--reset-ms` later, back to 0. The alarm event
//!   raised carries that value, so value → event latency is matched per crossing; prints
//!   p50_us, p99_us, max_us over the crossings after the warm-up, with events and missing.
//! - `queued`: a persistent subscriber of `<prefix>/queued` subscribes and goes away, one
//!   publisher sends M there, the subscriber comes back for them; prints sent, published,
//!   received, lost, seconds (the subscriber's return) and, with `--broker-pid`, rss_before_kb,
//!   rss_with_kb and bytes_per_message (the broker's memory per queued message).
//!
//! The subscribers may sit on another broker than the publishers (`--sub-host`, `--sub-port`,
//! `--sub-username`, `--sub-password`, `--sub-prefix`): the far side of a bridge.
//!
//! Payloads are JSON objects of exactly `--size` bytes (`{"value":N,"pad":"xxx…"}`; the latency
//! mode adds `"sent_ns":T`), so a broker that historizes them stores numbers.
//!
//!   cargo run --release --example mqtt_load -- --port 1883 --publishers 20 --messages 20000 \
//!       --qos 0 [--subscriber-qos 0] [--size 64] [--topic-prefix bench] \
//!       [--host 127.0.0.1] [--username u --password p]
//!   cargo run --release --example mqtt_load -- --mode fan-out --subscribers 200 --messages 2000
//!   cargo run --release --example mqtt_load -- --mode latency --rate 20000 --qos 1
//!   cargo run --release --example mqtt_load -- --mode idle --connections 10000 --broker-pid P

mod alarm_latency;
mod args;
mod client;
mod drain;
mod fan_in;
mod fan_in_raw;
mod fan_out;
mod idle;
mod latency;
mod latency_raw;
mod queued;
mod raw;
mod system;

use args::{parse_args, Mode};
use std::sync::Arc;

/// Descriptors beside the connections: stdio, the runtime's own, a margin.
const SPARE_FDS: u64 = 256;

#[tokio::main]
async fn main() {
    let args = Arc::new(parse_args());
    let connections = match args.mode {
        Mode::FanIn | Mode::FanInRaw => args.publishers + 1,
        Mode::FanOut => args.subscribers + 1,
        Mode::Latency | Mode::LatencyRaw => 2,
        Mode::Idle => args.connections,
        Mode::Drain => 1,
        Mode::AlarmLatency => 2,
        Mode::Queued => 2,
    };
    if let Err(e) = system::raise_nofile(connections as u64 + SPARE_FDS) {
        eprintln!("mqtt_load: {e}");
        std::process::exit(1);
    }
    let result = match args.mode {
        Mode::FanIn => fan_in::run(args).await,
        Mode::FanInRaw => fan_in_raw::run(args).await,
        Mode::FanOut => fan_out::run(args).await,
        Mode::Latency => latency::run(args).await,
        Mode::LatencyRaw => latency_raw::run(args).await,
        Mode::Idle => idle::run(args).await,
        Mode::Drain => drain::run(args).await,
        Mode::AlarmLatency => alarm_latency::run(args).await,
        Mode::Queued => queued::run(args).await,
    };
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("mqtt_load: {e}");
            std::process::exit(1);
        }
    }
}
