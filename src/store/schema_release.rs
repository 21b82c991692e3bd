//! Which svc release wrote a database. Each schema step records the release that applied it
//! (`svc_schema_migrations.release`), so a database that a newer release moved past the
//! steps this one knows is refused at open, before anything is changed, with a sentence
//! naming both releases: an older binary must not write rows a newer schema reads otherwise.

use super::{StoreError, StoreResult};

/// This binary's release, recorded with each step it applies.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// Refuses a database whose newest step (`found`, applied by `found_release` when that was
/// recorded) is past `known`, the newest step this release has.
pub fn refuse_newer(found: i64, found_release: Option<&str>, known: i64) -> StoreResult<()> {
    if found <= known {
        return Ok(());
    }
    let writer = match found_release {
        Some(release) => format!("svc {release}"),
        None => "a newer svc".to_string(),
    };
    Err(StoreError::Invalid(format!(
        "the database was written by {writer} (schema version {found}), and svc {RELEASE} \
         knows schema versions up to {known}: run {writer} or later, or restore a backup made \
         by svc {RELEASE}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_schema_is_refused_naming_both_releases() {
        assert!(refuse_newer(14, Some(RELEASE), 14).is_ok());
        assert!(refuse_newer(3, None, 14).is_ok());
        let refused = refuse_newer(15, Some("9.9.9"), 14).unwrap_err().to_string();
        assert!(refused.contains("svc 9.9.9"), "{refused}");
        assert!(refused.contains(&format!("svc {RELEASE}")), "{refused}");
        assert!(refused.contains("schema version 15"), "{refused}");
        let unnamed = refuse_newer(15, None, 14).unwrap_err().to_string();
        assert!(unnamed.contains("a newer svc"), "{unnamed}");
    }
}
