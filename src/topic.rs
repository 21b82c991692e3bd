//! MQTT topic names (a tag's path) and topic filters: validation and wildcard matching.

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

/// A subscription filter: levels may be `+`, and `#` may be the last level.
pub fn validate_topic_filter(filter: &str) -> Result<(), String> {
    if filter.is_empty() || filter.len() > MAX_TOPIC_BYTES || filter.contains('\0') {
        return Err(format!("`{filter}` is not a valid topic filter"));
    }
    let levels: Vec<&str> = filter.split('/').collect();
    for (i, level) in levels.iter().enumerate() {
        let wildcard_misused = (level.contains('+') && *level != "+")
            || (level.contains('#') && (*level != "#" || i + 1 != levels.len()));
        if wildcard_misused {
            return Err(format!("`{filter}` is not a valid topic filter"));
        }
    }
    Ok(())
}

/// Whether `topic` matches `filter` under MQTT rules (`$` topics are not matched by a leading
/// wildcard).
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    let mut topic_levels = topic.split('/');
    for level in filter.split('/') {
        match level {
            "#" => return true,
            "+" => {
                if topic_levels.next().is_none() {
                    return false;
                }
            }
            exact => {
                if topic_levels.next() != Some(exact) {
                    return false;
                }
            }
        }
    }
    topic_levels.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_topic_name("plant/line1/temp").is_ok());
        assert!(validate_topic_name("a").is_ok());
        for bad in ["", "a/+/b", "a/#", "a//b", "/a", "a/", "$SYS/x", "a\0b"] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn filters() {
        for good in ["#", "+", "a/+/c", "a/#", "a/b", "+/+/#"] {
            assert!(validate_topic_filter(good).is_ok(), "{good}");
        }
        for bad in ["", "a/#/b", "a+/b", "a/b#", "##"] {
            assert!(validate_topic_filter(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching() {
        assert!(topic_matches("#", "a/b/c"));
        assert!(topic_matches("a/#", "a"));
        assert!(topic_matches("a/#", "a/b/c"));
        assert!(topic_matches("a/+/c", "a/b/c"));
        assert!(!topic_matches("a/+/c", "a/b/d"));
        assert!(!topic_matches("a/+", "a/b/c"));
        assert!(!topic_matches("a/b", "a/b/c"));
        assert!(topic_matches("+/b", "a/b"));
        assert!(!topic_matches("#", "$SYS/uptime"));
        assert!(topic_matches("$SYS/#", "$SYS/uptime"));
    }
}
