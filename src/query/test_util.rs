//! Helpers shared by the query parser's unit tests.

use super::{parse, Filter, ListQuery, QueryError};

/// Owned pairs from string slices.
pub(super) fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Parses pairs that must be valid.
pub(super) fn query(items: &[(&str, &str)]) -> ListQuery {
    match parse(&pairs(items)) {
        Ok(query) => query,
        Err(err) => panic!("{items:?} should parse: {err}"),
    }
}

/// Parses a single pair that must fail.
pub(super) fn failure(key: &str, value: &str) -> QueryError {
    match parse(&pairs(&[(key, value)])) {
        Ok(query) => panic!("{key}={value} should fail, got {query:?}"),
        Err(err) => err,
    }
}

/// Asserts one pair fails, naming the full key as the parameter and mentioning `needle`.
pub(super) fn assert_fails(key: &str, value: &str, needle: &str) {
    let err = failure(key, value);
    assert_eq!(err.param, key, "{key}={value}: {err}");
    assert!(
        err.reason.contains(needle),
        "{key}={value}: `{}` lacks `{needle}`",
        err.reason
    );
}

/// The single filter of a one-pair query.
pub(super) fn only_filter(key: &str, value: &str) -> Filter {
    let query = query(&[(key, value)]);
    assert_eq!(query.filters.len(), 1);
    assert!(query.or_filters.is_empty());
    query.filters[0].clone()
}

/// Same as [`only_filter`]; reads better where the value is the point.
pub(super) fn filter_of(key: &str, value: &str) -> Filter {
    only_filter(key, value)
}
