//! Drain: one subscriber waits for messages someone else sends (a bridge emptying its buffer)
//! and says when the first and the last arrived, in wall-clock time, so a script can time the
//! catch-up from an event of its own.

use crate::args::Args;
use crate::client::{now_ns, subscribe, Deliveries};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let deliveries = Arc::new(Deliveries::default());
    let filter = format!("{}/#", args.sub_prefix());
    subscribe(
        &args,
        "bench-drain",
        &filter,
        args.sub_qos(),
        deliveries.clone(),
        |_| {},
    )
    .await?;
    eprintln!("subscribed");
    // Wall clock = process clock + this offset.
    let epoch_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_nanos() as u64;
    let offset = epoch_ns - now_ns();
    let expected = args.messages as u64;
    // Waits for the first message however long the sender takes to start, then for the rest.
    while deliveries.received() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    deliveries.wait_for(expected).await;
    let wall_ms = |ns: u64| (ns + offset) / 1_000_000;
    Ok(format!(
        "{{\"received\":{},\"first_ms\":{},\"last_ms\":{}}}",
        deliveries.received(),
        wall_ms(deliveries.first_ns.load(Ordering::Relaxed)),
        wall_ms(deliveries.last_ns.load(Ordering::Relaxed)),
    ))
}
