//! Unit tests of the tag-tree model: insert, update, seeding from the server's last values,
//! collapse, filter, rate and sparkline bookkeeping.
use super::*;

fn paths(tree: &mut Tree) -> Vec<String> {
    let rows = tree.rows().to_vec();
    rows.iter().map(|&id| tree.node(id).path.clone()).collect()
}

fn sample(now: Instant) -> Tree {
    let mut tree = Tree::new(now);
    tree.update("acme/line1/temp", b"21.5", false, 0, now);
    tree.update("acme/line1/speed", b"3", false, 1, now);
    tree.update("acme/line2/temp", b"19", true, 0, now);
    tree.update("other", b"x", false, 0, now);
    tree
}

#[test]
fn insert_builds_levels_in_sorted_order() {
    let now = Instant::now();
    let mut tree = sample(now);
    assert_eq!(
        paths(&mut tree),
        [
            "acme",
            "acme/line1",
            "acme/line1/speed",
            "acme/line1/temp",
            "acme/line2",
            "acme/line2/temp",
            "other"
        ]
    );
    let acme = tree.find("acme/line1/temp").map(|id| tree.node(id).depth);
    assert_eq!(acme, Some(2));
    assert_eq!(tree.topic_count(), 4);
    assert_eq!(tree.message_count(), 4);
    let root_child = tree.rows()[0];
    assert_eq!(tree.node(root_child).topics, 3);
    assert!(tree.node(root_child).tag.is_none());
}

#[test]
fn update_keeps_last_value_and_bookkeeping() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    let id = tree.update("a/b", b"1", false, 0, t0);
    let again = tree.update("a/b", b"2", true, 2, t0 + Duration::from_secs(1));
    assert_eq!(id, again);
    let tag = tree.node(id).tag.clone().unwrap();
    assert_eq!(tag.payload, Payload::Json(serde_json::json!(2)));
    assert!(tag.retained());
    assert_eq!((tag.qos, tag.count, tag.size), (2, 2, 1));
    assert_eq!(tag.spark().iter().copied().collect::<Vec<_>>(), [1.0, 2.0]);
    // Structure did not change on the second message: no rebuild needed.
    assert!(!tree.dirty || tree.rows().len() == 2);
}

#[test]
fn changed_at_only_moves_when_the_value_differs() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    let id = tree.update("a", b"1", false, 0, t0);
    let t1 = t0 + Duration::from_secs(5);
    tree.update("a", b"1", false, 0, t1);
    let tag = tree.node(id).tag.as_ref().unwrap();
    assert_eq!(tag.changed, t0);
    assert_eq!(tag.updated, t1);
    assert!(!tag.is_fresh(t1));
    tree.update("a", b"2", false, 0, t1);
    assert!(tree.node(id).tag.as_ref().unwrap().is_fresh(t1));
}

#[test]
fn collapse_hides_descendants_and_expand_restores_them() {
    let now = Instant::now();
    let mut tree = sample(now);
    let line1 = tree.find("acme/line1/temp").and_then(|id| tree.parent(id));
    let line1 = line1.unwrap();
    tree.toggle(line1);
    assert_eq!(
        paths(&mut tree),
        [
            "acme",
            "acme/line1",
            "acme/line2",
            "acme/line2/temp",
            "other"
        ]
    );
    assert_eq!(tree.row_of(tree.find("acme/line1/temp").unwrap()), None);
    assert_eq!(tree.row_of(line1), Some(1));
    tree.toggle(line1);
    assert_eq!(paths(&mut tree).len(), 7);
}

#[test]
fn filter_keeps_matches_and_ancestors_case_insensitively() {
    let now = Instant::now();
    let mut tree = sample(now);
    tree.set_filter("TEMP");
    assert_eq!(
        paths(&mut tree),
        [
            "acme",
            "acme/line1",
            "acme/line1/temp",
            "acme/line2",
            "acme/line2/temp"
        ]
    );
    tree.set_filter("line2");
    assert_eq!(paths(&mut tree), ["acme", "acme/line2", "acme/line2/temp"]);
    tree.set_filter("nothing");
    assert!(paths(&mut tree).is_empty());
    tree.set_filter("");
    assert_eq!(paths(&mut tree).len(), 7);
}

#[test]
fn rate_counts_the_sliding_window() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    let mut id = 0;
    // 5 updates per second for 20 seconds.
    for i in 0..100u64 {
        id = tree.update("r", b"1", false, 0, t0 + Duration::from_millis(i * 200));
    }
    let now = t0 + Duration::from_millis(19_900);
    let rate = tree.rate(id, now);
    assert!((rate - 5.0).abs() < 0.01, "{rate}");
    // Young tag: the rate is over the seconds it has existed.
    let young = tree.update("y", b"1", false, 0, now);
    tree.update("y", b"2", false, 0, now);
    assert!((tree.rate(young, now) - 2.0).abs() < 0.01);
    // Long after the last update the window is empty.
    assert_eq!(tree.rate(id, t0 + Duration::from_secs(60)), 0.0);
}

#[test]
fn sparkline_ring_keeps_the_latest_numbers_only() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    let mut id = 0;
    for i in 0..(SPARK_LEN + 10) {
        id = tree.update("s", i.to_string().as_bytes(), false, 0, t0);
    }
    tree.update("s", b"\"text\"", false, 0, t0);
    tree.update("s", &[0xff], false, 0, t0);
    let spark = tree.node(id).tag.as_ref().unwrap().spark();
    assert_eq!(spark.len(), SPARK_LEN);
    assert_eq!(spark.front(), Some(&10.0));
    assert_eq!(spark.back(), Some(&((SPARK_LEN + 9) as f64)));
}

#[test]
fn odd_topics_and_clear() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    tree.update("/leading", b"1", false, 0, t0);
    tree.update("a//b", b"1", false, 0, t0);
    tree.update("a", b"1", false, 0, t0);
    assert_eq!(paths(&mut tree), ["", "/leading", "a", "a/", "a//b"]);
    let a = tree.find("a").unwrap();
    assert!(tree.node(a).tag.is_some() && tree.node(a).has_children());
    assert_eq!(tree.node(a).topics, 2);
    tree.set_filter("lead");
    tree.clear();
    assert_eq!(tree.topic_count(), 0);
    assert_eq!(tree.filter(), "lead");
    assert!(paths(&mut tree).is_empty());
}

#[test]
fn thousands_of_topics_stay_cheap_per_message() {
    let t0 = Instant::now();
    let mut tree = Tree::new(t0);
    for i in 0..5000 {
        tree.update(&format!("site/area{}/tag{i}", i % 50), b"1", false, 0, t0);
    }
    assert_eq!(tree.rows().len(), 5000 + 50 + 1);
    // Updates to known topics do not invalidate the rows.
    for i in 0..5000 {
        tree.update(&format!("site/area{}/tag{i}", i % 50), b"2", false, 0, t0);
    }
    assert!(!tree.dirty);
}

#[test]
fn the_servers_last_values_fill_in_without_replacing_newer_ones() {
    let t0 = Instant::now();
    let now = t0 + Duration::from_secs(60);
    let mut tree = Tree::new(t0);
    // A snapshot on an empty tree: the value, dated by its age, is no MQTT message.
    assert!(tree.seed("a/old", b"1.5", Duration::from_secs(20), now));
    let id = tree.find("a/old").unwrap();
    let tag = tree.node(id).tag.clone().unwrap();
    assert_eq!(tag.payload, Payload::Json(serde_json::json!(1.5)));
    assert_eq!(
        (tag.origin, tag.updated, tag.count),
        (Origin::Snapshot, t0 + Duration::from_secs(40), 1)
    );
    assert!(
        !tag.is_fresh(now),
        "an old value is not highlighted as a change"
    );
    assert_eq!((tree.message_count(), tree.rate(id, now)), (0, 0.0));
    assert_eq!(tree.node(tree.parent(id).unwrap()).topics, 1);

    // A live message that came first is as new as the snapshot, or newer: it stays.
    tree.update("a/live", b"2", false, 0, now);
    assert!(!tree.seed("a/live", b"1", Duration::ZERO, now));
    let live = tree.find("a/live").unwrap();
    assert_eq!(
        tree.node(live).tag.as_ref().unwrap().payload,
        Payload::Json(serde_json::json!(2))
    );

    // A retained replay is older than the snapshot read after it: the snapshot replaces it,
    // and a replay arriving after the snapshot does not replace the snapshot.
    tree.update("a/kept", b"\"retained\"", true, 1, now);
    assert!(tree.seed("a/kept", b"\"latest\"", Duration::ZERO, now));
    tree.update("a/kept", b"\"retained\"", true, 1, now);
    let kept = tree.find("a/kept").unwrap();
    assert_eq!(
        tree.node(kept).tag.as_ref().unwrap().payload,
        Payload::Json(serde_json::json!("latest"))
    );

    // After a new subscription, the next snapshot is newer than what came before it.
    tree.resync();
    assert!(tree.seed("a/live", b"3", Duration::ZERO, now));
    tree.update("a/kept", b"\"again\"", true, 1, now);
    assert_eq!(
        tree.node(kept).tag.as_ref().unwrap().payload,
        Payload::Json(serde_json::json!("again"))
    );
    // Live messages always apply.
    tree.update("a/old", b"4", false, 0, now);
    let tag = tree.node(id).tag.as_ref().unwrap();
    assert_eq!((tag.origin, tag.count), (Origin::Live, 2));
    assert_eq!(tree.topic_count(), 3);
}
