//! MQTT topic names: the rules a tag's path follows.

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
}
