//! Tests of the subscription index: the MQTT matching rules one by one, shared-group round robin,
//! pruning, and property tests against `crate::topic::filter_matches` and a naive list model.

use super::*;
use crate::topic::filter_matches;
use proptest::prelude::*;
use std::collections::HashSet;

type Index = SubscriptionIndex<u32, &'static str>;

/// The keys visited for `topic`, sorted, with every client online.
fn keys(index: &Index, topic: &str) -> Vec<u32> {
    let mut keys = Vec::new();
    index.matches(topic, |_| true, |k, _| keys.push(*k));
    keys.sort_unstable();
    keys
}

fn index_of(filters: &[&'static str]) -> Index {
    let mut index = Index::new();
    for (i, filter) in filters.iter().enumerate() {
        index.subscribe(filter, i as u32, filter);
    }
    index
}

#[test]
fn exact_filters_match_only_their_topic() {
    let index = index_of(&["a/b", "a/b/c", "a"]);
    assert_eq!(keys(&index, "a/b"), [0]);
    assert_eq!(keys(&index, "a/b/c"), [1]);
    assert_eq!(keys(&index, "a"), [2]);
    assert!(keys(&index, "a/c").is_empty());
    assert!(keys(&index, "b").is_empty());
}

#[test]
fn plus_matches_exactly_one_level_even_an_empty_one() {
    let index = index_of(&["a/+/c", "a/+", "+"]);
    assert_eq!(keys(&index, "a/x/c"), [0]);
    assert_eq!(keys(&index, "a//c"), [0]);
    assert_eq!(keys(&index, "a/x"), [1]);
    assert_eq!(keys(&index, "a/"), [1]);
    assert_eq!(keys(&index, "x"), [2]);
    assert!(keys(&index, "a/x/c/d").is_empty());
    assert!(keys(&index, "x/y").is_empty());
}

#[test]
fn hash_matches_the_parent_and_everything_below() {
    let index = index_of(&["a/#", "#"]);
    assert_eq!(keys(&index, "a"), [0, 1]);
    assert_eq!(keys(&index, "a/b"), [0, 1]);
    assert_eq!(keys(&index, "a/b/c"), [0, 1]);
    assert_eq!(keys(&index, "a/"), [0, 1]);
    assert_eq!(keys(&index, "ab"), [1]);
    assert_eq!(keys(&index, "b/a"), [1]);
}

#[test]
fn first_level_wildcards_skip_dollar_topics() {
    let index = index_of(&["#", "+/x", "+", "$SYS/#", "$SYS/+", "a/+"]);
    assert_eq!(keys(&index, "$SYS/x"), [3, 4]);
    assert_eq!(keys(&index, "$SYS"), [3]);
    assert!(keys(&index, "$other").is_empty());
    // `$` only counts at the start of the topic.
    assert_eq!(keys(&index, "a/$x"), [0, 5]);
    assert_eq!(keys(&index, "q/x"), [0, 1]);
}

#[test]
fn empty_levels_are_real_levels() {
    let index = index_of(&["a//b", "/a", "a/"]);
    assert_eq!(keys(&index, "a//b"), [0]);
    assert!(keys(&index, "a/b").is_empty());
    assert_eq!(keys(&index, "/a"), [1]);
    assert!(keys(&index, "a").is_empty());
    assert_eq!(keys(&index, "a/"), [2]);
}

#[test]
fn each_matching_filter_is_one_visit() {
    let mut index = Index::new();
    index.subscribe("a/+", 7, "plus");
    index.subscribe("a/#", 7, "hash");
    let mut seen = Vec::new();
    index.matches("a/b", |_| true, |k, v| seen.push((*k, *v)));
    seen.sort_unstable();
    assert_eq!(seen, [(7, "hash"), (7, "plus")]);
}

#[test]
fn replace_returns_the_old_value_and_keeps_len() {
    let mut index = Index::new();
    assert!(index.is_empty());
    assert_eq!(index.subscribe("a/b", 1, "first"), None);
    assert_eq!(index.subscribe("a/b", 1, "second"), Some("first"));
    assert_eq!(index.subscribe("a/b", 2, "other"), None);
    assert_eq!(index.subscribe("$share/g/a/b", 1, "shared"), None);
    assert_eq!(
        index.subscribe("$share/g/a/b", 1, "shared2"),
        Some("shared")
    );
    assert_eq!(index.len(), 3);
    let mut seen = Vec::new();
    index.matches("a/b", |_| true, |k, v| seen.push((*k, *v)));
    seen.sort_unstable();
    assert_eq!(seen, [(1, "second"), (1, "shared2"), (2, "other")]);
}

#[test]
fn unsubscribe_returns_the_value_and_only_removes_that_key() {
    let mut index = index_of(&["a/b", "a/b"]);
    assert_eq!(index.unsubscribe("a/b", &5), None);
    assert_eq!(index.unsubscribe("a/c", &0), None);
    assert_eq!(index.unsubscribe("a/+", &0), None);
    assert_eq!(index.unsubscribe("a/b", &0), Some("a/b"));
    assert_eq!(index.unsubscribe("a/b", &0), None);
    assert_eq!(index.len(), 1);
    assert_eq!(keys(&index, "a/b"), [1]);
}

#[test]
fn unsubscribe_prunes_empty_nodes_and_keeps_needed_ones() {
    let mut index = Index::new();
    index.subscribe("a/b/c/d", 1, "");
    assert_eq!(index.node_count(), 5);
    assert_eq!(index.unsubscribe("a/b/c/d", &1), Some(""));
    assert_eq!(index.node_count(), 1);

    index.subscribe("a/b/c", 1, "");
    index.subscribe("a/x", 2, "");
    index.subscribe("a/+/#", 3, "");
    index.subscribe("a/b/#", 4, "");
    assert_eq!(index.node_count(), 6); // root, a, b, c, x, +
    index.unsubscribe("a/b/c", &1);
    assert_eq!(index.node_count(), 5, "b stays for a/b/#");
    index.unsubscribe("a/b/#", &4);
    assert_eq!(index.node_count(), 4, "a stays for x and +");
    index.unsubscribe("a/+/#", &3);
    assert_eq!(index.node_count(), 3);
    index.unsubscribe("a/x", &2);
    assert_eq!(index.node_count(), 1);
    assert!(index.is_empty());

    index.subscribe("$share/g/a/b", 1, "");
    index.subscribe("$share/h/a/b", 2, "");
    index.unsubscribe("$share/g/a/b", &1);
    assert_eq!(index.node_count(), 3, "group h still needs a/b");
    index.unsubscribe("$share/h/a/b", &2);
    assert_eq!(index.node_count(), 1);
}

#[test]
fn churn_on_one_filter_with_many_subscribers() {
    let mut index = SubscriptionIndex::<u32, u32>::new();
    for key in 0..10_000 {
        index.subscribe("plant/+/temp", key, key);
    }
    assert_eq!(index.len(), 10_000);
    let mut count = 0;
    index.matches("plant/l1/temp", |_| true, |_, _| count += 1);
    assert_eq!(count, 10_000);
    for key in (0..10_000).step_by(2) {
        assert_eq!(index.unsubscribe("plant/+/temp", &key), Some(key));
    }
    let mut odd = 0;
    index.matches("plant/l1/temp", |_| true, |k, _| odd += k % 2);
    assert_eq!(odd, 5_000);
    for key in (1..10_000).step_by(2) {
        index.unsubscribe("plant/+/temp", &key);
    }
    assert!(index.is_empty());
    assert_eq!(index.node_count(), 1);
}

#[test]
fn very_deep_filters_do_not_overflow_the_stack() {
    // 30,000 levels: recursion over levels would overflow a test thread's 2 MiB stack.
    let filter = vec!["+"; 30_000].join("/");
    let topic = vec!["x"; 30_000].join("/");
    let mut index = Index::new();
    index.subscribe(&filter, 1, "deep");
    index.subscribe(&format!("{filter}/#"), 2, "deeper");
    assert_eq!(keys(&index, &topic), [1, 2]);
    assert_eq!(index.unsubscribe(&filter, &1), Some("deep"));
    assert_eq!(index.node_count(), 30_001);
    assert_eq!(
        index.unsubscribe(&format!("{filter}/#"), &2),
        Some("deeper")
    );
    assert_eq!(index.node_count(), 1);
    index.subscribe(&filter, 3, "dropped whole");
    drop(index);
}

#[test]
fn parse_shared_splits_and_rejects() {
    assert_eq!(parse_shared("a/b"), Ok(None));
    assert_eq!(parse_shared("$share"), Ok(None));
    assert_eq!(parse_shared("$SYS/x"), Ok(None));
    assert_eq!(parse_shared("$share/g/a/+"), Ok(Some(("g", "a/+"))));
    assert_eq!(parse_shared("$share/g/#"), Ok(Some(("g", "#"))));
    assert_eq!(parse_shared("$share/g//"), Ok(Some(("g", "/"))));
    for bad in [
        "$share/",
        "$share/g",
        "$share//a",
        "$share/g/",
        "$share/g+/a",
        "$share/#/a",
        "$share/g/a/#/b",
        "$share/g/a+",
    ] {
        let err = parse_shared(bad).expect_err(bad);
        assert!(err.contains(bad), "{err}");
    }
}

/// The members `visit` picks for `topic` over `rounds` publishes, with `online` deciding presence.
fn picks(index: &Index, topic: &str, online: &[u32], rounds: usize) -> Vec<u32> {
    let mut picked = Vec::new();
    for _ in 0..rounds {
        index.matches(topic, |k| online.contains(k), |k, _| picked.push(*k));
    }
    picked
}

#[test]
fn shared_group_alternates_between_online_members() {
    let mut index = Index::new();
    index.subscribe("$share/g/a/+", 1, "");
    index.subscribe("$share/g/a/+", 2, "");
    let picked = picks(&index, "a/b", &[1, 2], 6);
    assert_eq!(picked.len(), 6, "one member per publish");
    for pair in picked.windows(2) {
        assert_ne!(pair[0], pair[1], "{picked:?}");
    }
}

#[test]
fn shared_group_prefers_online_members_in_turn() {
    let mut index = Index::new();
    for key in [1, 2, 3, 4] {
        index.subscribe("$share/g/a", key, "");
    }
    let picked = picks(&index, "a", &[2, 4], 6);
    assert!(picked.iter().all(|k| [2, 4].contains(k)), "{picked:?}");
    for pair in picked.windows(2) {
        assert_ne!(pair[0], pair[1], "{picked:?}");
    }
    let picked = picks(&index, "a", &[3], 3);
    assert_eq!(picked, [3, 3, 3]);
}

#[test]
fn shared_group_with_nobody_online_still_picks_one_in_turn() {
    let mut index = Index::new();
    for key in [1, 2, 3] {
        index.subscribe("$share/g/a", key, "");
    }
    let picked = picks(&index, "a", &[], 6);
    assert_eq!(picked.len(), 6);
    let first_round: HashSet<u32> = picked[..3].iter().copied().collect();
    assert_eq!(first_round, HashSet::from([1, 2, 3]), "{picked:?}");
}

#[test]
fn groups_are_per_name_and_per_filter_beside_plain_subscribers() {
    let mut index = Index::new();
    index.subscribe("$share/g/a/+", 1, "g+");
    index.subscribe("$share/g/a/+", 2, "g+");
    index.subscribe("$share/g/a/#", 3, "g#");
    index.subscribe("$share/h/a/+", 4, "h+");
    index.subscribe("$share/h/a/+", 5, "h+");
    index.subscribe("a/+", 6, "plain");
    for _ in 0..4 {
        let mut seen = Vec::new();
        index.matches("a/b", |_| true, |_, v| seen.push(*v));
        seen.sort_unstable();
        assert_eq!(seen, ["g#", "g+", "h+", "plain"]);
    }
    // Group g on `a/+` does not match `a`, but g on `a/#` does.
    assert_eq!(keys(&index, "a"), [3]);
}

// ---- property tests ----

fn level() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "b", "", "$s"])
}

fn topic() -> impl Strategy<Value = String> {
    prop::collection::vec(level(), 1..=4).prop_map(|levels| levels.join("/"))
}

/// Valid filters over the tiny alphabet: 1 to 4 levels, `+` anywhere, `#` only last. Mapped,
/// not filtered: a million cases would otherwise exceed proptest's limit of rejected inputs.
fn filter() -> impl Strategy<Value = String> {
    let level = prop::sample::select(vec!["a", "b", "", "$s", "+"]);
    (prop::collection::vec(level, 0..=4), any::<bool>()).prop_map(|(mut levels, hash)| {
        if hash {
            levels.push("#");
        }
        // No levels, or one empty level, would be the empty filter, which is invalid: it
        // becomes the lone `#` instead.
        match levels.join("/") {
            empty if empty.is_empty() => "#".to_string(),
            filter => filter,
        }
    })
}

#[derive(Debug, Clone)]
enum Op {
    Subscribe(String, u8, u32),
    Unsubscribe(String, u8),
}

/// A filter as subscribed: plain, or shared in group `g` or `h`.
fn full_filter() -> impl Strategy<Value = String> {
    (
        filter(),
        prop::sample::select(vec![None, Some("g"), Some("h")]),
    )
        .prop_map(|(filter, group)| match group {
            Some(group) => format!("$share/{group}/{filter}"),
            None => filter,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (full_filter(), 0u8..4, any::<u32>()).prop_map(|(f, k, v)| Op::Subscribe(f, k, v)),
        (full_filter(), 0u8..4).prop_map(|(f, k)| Op::Unsubscribe(f, k)),
    ]
}

proptest! {
    #[test]
    fn matches_agrees_with_filter_matches(filters in prop::collection::vec(filter(), 1..8), topics in prop::collection::vec(topic(), 1..6)) {
        let mut index = SubscriptionIndex::<usize, ()>::new();
        for (i, filter) in filters.iter().enumerate() {
            prop_assert!(validate_topic_filter(filter).is_ok(), "{}", filter);
            index.subscribe(filter, i, ());
        }
        for topic in &topics {
            let mut got = Vec::new();
            index.matches(topic, |_| true, |k, _| got.push(*k));
            got.sort_unstable();
            let expected: Vec<usize> = (0..filters.len()).filter(|&i| filter_matches(&filters[i], topic)).collect();
            prop_assert_eq!(got, expected, "topic {:?} filters {:?}", topic, filters);
        }
    }

    #[test]
    fn subscribe_and_unsubscribe_agree_with_a_list(ops in prop::collection::vec(op(), 1..40), topics in prop::collection::vec(topic(), 1..4)) {
        // Values carry their filter so each visit can be traced back to its subscription.
        let mut index = SubscriptionIndex::<u8, (String, u32)>::new();
        let mut model: Vec<(String, u8, u32)> = Vec::new();
        for op in &ops {
            match op {
                Op::Subscribe(filter, key, value) => {
                    let at = model.iter().position(|(f, k, _)| f == filter && k == key);
                    let expected = match at {
                        Some(at) => Some(std::mem::replace(&mut model[at].2, *value)),
                        None => { model.push((filter.clone(), *key, *value)); None }
                    };
                    let got = index.subscribe(filter, *key, (filter.clone(), *value)).map(|(_, v)| v);
                    prop_assert_eq!(got, expected);
                }
                Op::Unsubscribe(filter, key) => {
                    let at = model.iter().position(|(f, k, _)| f == filter && k == key);
                    let expected = at.map(|at| model.remove(at).2);
                    let got = index.unsubscribe(filter, key).map(|(_, v)| v);
                    prop_assert_eq!(got, expected);
                }
            }
            prop_assert_eq!(index.len(), model.len());
            for topic in &topics {
                check_against_model(&index, &model, topic)?;
            }
        }
        for (filter, key, _) in std::mem::take(&mut model) {
            prop_assert!(index.unsubscribe(&filter, &key).is_some());
        }
        prop_assert!(index.is_empty());
        prop_assert_eq!(index.node_count(), 1, "every node pruned");
    }
}

/// Plain subscriptions: visited exactly as the model says. Shared filters: each matching one is
/// visited once, for one of its members with that member's value.
fn check_against_model(
    index: &SubscriptionIndex<u8, (String, u32)>,
    model: &[(String, u8, u32)],
    topic: &str,
) -> Result<(), TestCaseError> {
    let mut plain = Vec::new();
    let mut shared = Vec::new();
    index.matches(
        topic,
        |_| true,
        |k, (filter, v)| {
            let entry = (filter.clone(), *k, *v);
            if filter.starts_with(SHARE_PREFIX) {
                shared.push(entry);
            } else {
                plain.push(entry);
            }
        },
    );
    let real_filter = |f: &str| match parse_shared(f) {
        Ok(Some((_, inner))) => inner.to_owned(),
        _ => f.to_owned(),
    };
    let mut expected_plain: Vec<_> = model
        .iter()
        .filter(|(f, _, _)| !f.starts_with(SHARE_PREFIX) && filter_matches(f, topic))
        .cloned()
        .collect();
    expected_plain.sort();
    plain.sort();
    prop_assert_eq!(plain, expected_plain, "plain, topic {:?}", topic);

    let expected_groups: HashSet<&String> = model
        .iter()
        .filter(|(f, _, _)| f.starts_with(SHARE_PREFIX) && filter_matches(&real_filter(f), topic))
        .map(|(f, _, _)| f)
        .collect();
    let visited_groups: HashSet<&String> = shared.iter().map(|(f, _, _)| f).collect();
    prop_assert_eq!(shared.len(), visited_groups.len(), "one member per group");
    prop_assert_eq!(visited_groups, expected_groups, "groups, topic {:?}", topic);
    for entry in &shared {
        prop_assert!(model.contains(entry), "{:?} is a member", entry);
    }
    Ok(())
}
