//! Fan-in: one `<prefix>/#` subscriber connects first, then N publishers each send M messages to
//! `<prefix>/p<i>` concurrently, as fast as the broker takes them; with `--topics K` publisher i
//! cycles its messages over `<prefix>/p<i>/t0` … `t<K-1>` (many topics, e.g. one alarm each).

use crate::args::Args;
use crate::client::{finish_fan_in, publish_burst, subscribe, Deliveries};
use std::sync::{Arc, OnceLock};

/// Publisher `p`'s topics: `<prefix>/p<p>`, or `<prefix>/p<p>/t<k>` for k < `per_publisher`.
pub fn topics_of(prefix: &str, p: usize, per_publisher: usize) -> Vec<String> {
    if per_publisher == 0 {
        return vec![format!("{prefix}/p{p}")];
    }
    (0..per_publisher)
        .map(|k| format!("{prefix}/p{p}/t{k}"))
        .collect()
}

pub async fn run(args: Arc<Args>) -> Result<String, String> {
    let total = (args.publishers * args.messages) as u64;
    let deliveries = Arc::new(Deliveries::default());
    let filter = format!("{}/#", args.sub_prefix());
    subscribe(
        &args,
        "bench-subscriber",
        &filter,
        args.sub_qos(),
        deliveries.clone(),
        |_| {},
    )
    .await?;

    let first_publish = Arc::new(OnceLock::new());
    let publishers: Vec<_> = (0..args.publishers)
        .map(|p| {
            let topics = topics_of(&args.prefix, p, args.topics);
            let id = format!("bench-publisher-{p}");
            tokio::spawn(publish_burst(
                args.clone(),
                id,
                topics,
                args.messages,
                first_publish.clone(),
            ))
        })
        .collect();
    Ok(finish_fan_in(publishers, total, &deliveries, &first_publish).await)
}
