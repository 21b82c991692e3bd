//! Fan-out: N subscribers of `<prefix>/fanout` connect first (all SUBACKs in), then one
//! publisher sends M messages there as fast as the broker takes them; every subscriber should
//! receive all M.

use crate::args::Args;
use crate::client::{burst_outcome, now_ns, publish_burst, subscribe, Deliveries};
use std::sync::{Arc, OnceLock};

/// Subscriber handshakes in flight at once (connecting 200 at once only measures the accept
/// queue).
const CONNECTING: usize = 50;

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let topic = format!("{}/fanout", args.prefix);
    let total = (args.messages * args.subscribers) as u64;
    let deliveries = Arc::new(Deliveries::default());
    for first in (0..args.subscribers).step_by(CONNECTING) {
        let batch: Vec<_> = (first..(first + CONNECTING).min(args.subscribers))
            .map(|s| {
                let (args, topic, deliveries) = (args.clone(), topic.clone(), deliveries.clone());
                tokio::spawn(async move {
                    let id = format!("bench-fanout-subscriber-{s}");
                    subscribe(&args, &id, &topic, args.sub_qos(), deliveries, |_| {}).await
                })
            })
            .collect();
        for subscriber in batch {
            subscriber
                .await
                .map_err(|e| format!("subscriber task: {e}"))??;
        }
    }

    let first_publish = Arc::new(OnceLock::new());
    let id = "bench-fanout-publisher".to_string();
    publish_burst(
        args.clone(),
        id,
        vec![topic],
        args.messages,
        first_publish.clone(),
    )
    .await;
    let published = now_ns();
    deliveries.wait_for(total).await;

    let outcome = burst_outcome(total, &deliveries, &first_publish, published);
    Ok(format!(
        "{{\"sent\":{total},\"published\":{},\"subscribers\":{},{outcome}}}",
        args.messages, args.subscribers,
    ))
}
