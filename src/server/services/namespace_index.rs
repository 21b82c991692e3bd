//! Which domain owns each branch of the Unified Namespace: the paths of every domain's
//! `namespaces` records, so a topic under one of them belongs to that domain. Paths of
//! different domains never overlap (neither is a prefix of the other at a level boundary),
//! so a topic has at most one namespace owner.

use crate::topic::validate_topic_name;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Default)]
pub struct NamespaceIndex {
    /// Path → owning domain.
    by_path: HashMap<String, Arc<str>>,
    /// Domain → its paths, to forget them when the domain's namespaces are reloaded.
    by_domain: HashMap<String, Vec<String>>,
}

/// Whether `topic` is `path` or lies under it.
pub fn covers(path: &str, topic: &str) -> bool {
    topic
        .strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A namespace path: a topic name (no wildcards) of non-empty levels, not a `$` topic.
pub fn check_path(path: &str) -> Result<(), String> {
    validate_topic_name(path).map_err(|e| format!("field `path`: {e}"))?;
    if path.starts_with('$') {
        return Err("field `path` cannot be a `$` topic".into());
    }
    if path.split('/').any(str::is_empty) {
        return Err(
            "field `path` cannot have empty levels (a leading, trailing or double `/`)".into(),
        );
    }
    Ok(())
}

impl NamespaceIndex {
    /// Replaces one domain's paths.
    pub fn replace_domain(&mut self, domain: &str, paths: Vec<String>) {
        if let Some(old) = self.by_domain.remove(domain) {
            for path in old {
                if self.by_path.get(&path).is_some_and(|d| &**d == domain) {
                    self.by_path.remove(&path);
                }
            }
        }
        let name: Arc<str> = Arc::from(domain);
        for path in &paths {
            self.by_path
                .entry(path.clone())
                .or_insert_with(|| name.clone());
        }
        self.by_domain.insert(domain.to_string(), paths);
    }

    /// The domain whose namespace covers `topic`, and that namespace's path.
    pub fn owner(&self, topic: &str) -> Option<(&Arc<str>, &str)> {
        // Every level boundary of the topic is a candidate path; the longest match wins
        // (only one domain can own them all).
        let mut end = topic.len();
        loop {
            let candidate = &topic[..end];
            if let Some((path, domain)) = self.by_path.get_key_value(candidate) {
                return Some((domain, path));
            }
            end = candidate.rfind('/')?;
        }
    }

    /// Why `domain` may not take `path`: a namespace of another domain is the same, above or
    /// below it (the message names that domain and path).
    pub fn conflict(&self, domain: &str, path: &str) -> Option<String> {
        self.by_path
            .iter()
            .filter(|(_, owner)| &***owner != domain)
            .find(|(other, _)| covers(other, path) || covers(path, other))
            .map(|(other, owner)| {
                format!("namespace path `{path}` overlaps namespace `{other}` of domain `{owner}`")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn index() -> NamespaceIndex {
        let mut index = NamespaceIndex::default();
        index.replace_domain("acme", vec!["acme/plant1".into(), "acme/plant2".into()]);
        index.replace_domain("beta", vec!["beta".into()]);
        index
    }

    fn owner(index: &NamespaceIndex, topic: &str) -> Option<String> {
        index.owner(topic).map(|(d, p)| format!("{d} {p}"))
    }

    #[test]
    fn a_topic_belongs_to_the_namespace_above_it() {
        let index = index();
        assert_eq!(
            owner(&index, "acme/plant1/line/temp").as_deref(),
            Some("acme acme/plant1")
        );
        assert_eq!(
            owner(&index, "acme/plant1").as_deref(),
            Some("acme acme/plant1")
        );
        assert_eq!(
            owner(&index, "acme/plant10/x"),
            None,
            "a level is matched whole"
        );
        assert_eq!(owner(&index, "acme"), None);
        assert_eq!(owner(&index, "beta/x/y").as_deref(), Some("beta beta"));
        assert_eq!(owner(&index, "elsewhere"), None);
    }

    #[test]
    fn overlapping_paths_of_another_domain_conflict() {
        let index = index();
        let above = index.conflict("beta", "acme").expect("above acme/plant1");
        assert!(above.contains("domain `acme`"), "{above}");
        assert!(
            index.conflict("beta", "acme/plant1/line").is_some(),
            "below"
        );
        assert!(index.conflict("beta", "acme/plant1").is_some(), "the same");
        assert!(index.conflict("beta", "acme/plant3").is_none());
        assert!(
            index.conflict("acme", "acme/plant1/line").is_none(),
            "its own"
        );
    }

    #[test]
    fn replacing_a_domain_forgets_its_old_paths() {
        let mut index = index();
        index.replace_domain("acme", vec!["acme/plant3".into()]);
        assert_eq!(owner(&index, "acme/plant1/x"), None);
        assert_eq!(
            owner(&index, "acme/plant3/x").as_deref(),
            Some("acme acme/plant3")
        );
    }

    #[test]
    fn path_rules() {
        assert!(check_path("acme/plant1").is_ok());
        for bad in ["", "acme/+", "acme/#", "/acme", "acme/", "a//b", "$SYS/x"] {
            assert!(check_path(bad).is_err(), "{bad:?} was accepted");
        }
    }

    proptest! {
        /// `owner` agrees with a scan of every path with `covers`.
        #[test]
        fn owner_matches_a_scan(
            paths in proptest::collection::vec("[ab]{1,2}(/[ab]{1,2}){0,2}", 0..6),
            topic in "[ab]{1,2}(/[ab]{1,2}){0,3}",
        ) {
            let mut index = NamespaceIndex::default();
            index.replace_domain("d", paths.clone());
            let scanned = paths.iter().filter(|p| covers(p, &topic)).max_by_key(|p| p.len());
            prop_assert_eq!(index.owner(&topic).map(|(_, p)| p.to_string()), scanned.cloned());
        }
    }
}
