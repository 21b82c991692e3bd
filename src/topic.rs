//! MQTT topic names and filters: the rules a tag's path follows, and wildcard matching for
//! subscriptions made inside svc (function triggers, flow inputs).

/// Longest topic MQTT can carry.
const MAX_TOPIC_BYTES: usize = 65_535;

/// A tag path must be a publishable topic name with no empty levels.
pub fn validate_topic_name(topic: &str) -> Result<(), String> {
    if topic.is_empty() {
        return Err("a topic must not be empty".into());
    }
    if topic.len() > MAX_TOPIC_BYTES {
        return Err("a topic must be at most 65535 bytes".into());
    }
    if topic.contains(['+', '#']) {
        return Err(format!(
            "topic `{topic}` must not contain the wildcards + or #"
        ));
    }
    if topic.contains('\0') {
        return Err("a topic must not contain NUL characters".into());
    }
    if topic.starts_with('$') {
        return Err(format!(
            "topic `{topic}` must not start with $ (reserved for the broker)"
        ));
    }
    if topic.split('/').any(str::is_empty) {
        return Err(format!("topic `{topic}` must not have empty levels"));
    }
    Ok(())
}

/// A subscription filter: `+` must fill a whole level, `#` only as the last level.
pub fn validate_topic_filter(filter: &str) -> Result<(), String> {
    if filter.is_empty() {
        return Err("a topic filter must not be empty".into());
    }
    if filter.len() > MAX_TOPIC_BYTES {
        return Err("a topic filter must be at most 65535 bytes".into());
    }
    if filter.contains('\0') {
        return Err("a topic filter must not contain NUL characters".into());
    }
    let levels: Vec<&str> = filter.split('/').collect();
    for (i, level) in levels.iter().enumerate() {
        let misplaced_hash = level.contains('#') && (*level != "#" || i + 1 != levels.len());
        if misplaced_hash || (level.contains('+') && *level != "+") {
            return Err(format!(
                "topic filter `{filter}`: + must be a whole level and # the whole last level"
            ));
        }
    }
    Ok(())
}

/// Whether `topic` matches the (valid) filter; wildcards do not match topics starting with `$`.
pub fn filter_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    let mut topic_levels = topic.split('/');
    for level in filter.split('/') {
        match (level, topic_levels.next()) {
            ("#", _) => return true,
            ("+", Some(_)) => {}
            (level, Some(t)) if level == t => {}
            _ => return false,
        }
    }
    topic_levels.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        for good in ["#", "+", "a/+/c", "a/#", "+/+", "a/b"] {
            assert!(validate_topic_filter(good).is_ok(), "{good}");
        }
        for bad in ["", "a/#/c", "a/b#", "a+/b", "#/a", "a\0"] {
            assert!(validate_topic_filter(bad).is_err(), "{bad:?}");
        }
        let cases = [
            ("#", "a/b", true),
            ("a/#", "a", true),
            ("a/#", "a/b/c", true),
            ("a/+", "a/b", true),
            ("a/+", "a/b/c", false),
            ("a/+/c", "a/x/c", true),
            ("a/b", "a/b", true),
            ("a/b", "a/b/c", false),
            ("a/b/c", "a/b", false),
            ("#", "$SYS/x", false),
            ("+/x", "$SYS/x", false),
        ];
        for (filter, topic, expected) in cases {
            assert_eq!(filter_matches(filter, topic), expected, "{filter} {topic}");
        }
    }

    #[test]
    fn names() {
        assert!(validate_topic_name("plant/line1/temp").is_ok());
        assert!(validate_topic_name("a").is_ok());
        for bad in ["", "a/+/b", "a/#", "a//b", "/a", "a/", "$SYS/x", "a\0b"] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// Topic names of 1 to 5 non-empty levels, optionally a `$` topic (not a tag path).
    fn topic() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            prop::collection::vec("[a-z0-9 _.-]{1,6}", 1..6),
        )
            .prop_map(|(dollar, levels)| {
                let topic = levels.join("/");
                match dollar {
                    true => format!("${topic}"),
                    false if topic.is_empty() => "t".to_string(),
                    false => topic,
                }
            })
    }

    proptest! {
        /// A valid name is a valid filter that matches itself; `+` in place of any level and
        /// a trailing `#` still match; `#` alone matches every topic except `$` ones.
        #[test]
        fn wildcards_match_what_they_stand_for(topic in topic(), at in 0usize..5) {
            prop_assert_eq!(validate_topic_name(&topic).is_ok(), !topic.starts_with('$'), "{}", topic);
            prop_assert!(validate_topic_filter(&topic).is_ok());
            prop_assert!(filter_matches(&topic, &topic));
            let mut levels: Vec<&str> = topic.split('/').collect();
            let at = at % levels.len();
            let dollar_first = at == 0 && topic.starts_with('$');
            levels[at] = "+";
            let plus = levels.join("/");
            prop_assert!(validate_topic_filter(&plus).is_ok());
            prop_assert_eq!(filter_matches(&plus, &topic), !dollar_first, "{} vs {}", plus, topic);
            prop_assert_eq!(filter_matches("#", &topic), !topic.starts_with('$'));
            let below = format!("{topic}/#");
            prop_assert!(filter_matches(&below, &topic));
        }

        /// Nothing panics; a name with a wildcard is never valid.
        #[test]
        fn any_text_never_panics(filter in ".{0,30}", topic in ".{0,30}") {
            let name_ok = validate_topic_name(&topic).is_ok();
            prop_assert!(!(name_ok && (topic.contains('+') || topic.contains('#'))));
            if validate_topic_filter(&filter).is_ok() && name_ok {
                let _ = filter_matches(&filter, &topic);
            }
        }
    }
}
