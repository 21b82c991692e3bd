//! The scope a report's conditions give the historian, and every case where they must give
//! nothing away.

use super::*;
use crate::report_sql::check;
use proptest::prelude::*;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;

fn scope(sql: &str) -> HistorianScope {
    check(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .historian_scope()
}

fn range(start_ms: i64, end_ms: i64) -> HistorianScope {
    HistorianScope {
        start_ms,
        end_ms,
        topics: None,
    }
}

fn topics(names: &[&str]) -> Option<BTreeSet<String>> {
    Some(names.iter().map(|n| n.to_string()).collect())
}

#[test]
fn the_text_is_the_one_sqlite_writes() {
    let db = rusqlite::Connection::open_in_memory().unwrap();
    let mut stmt = db
        .prepare("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch')")
        .unwrap();
    let mut times = vec![
        TEXT_MIN_MS,
        TEXT_MAX_MS,
        0,
        -1,
        1,
        T0,
        T0 + 999,
        -62_135_596_800_000,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        times.push(TEXT_MIN_MS + (x % (TEXT_MAX_MS - TEXT_MIN_MS) as u64) as i64);
    }
    for ms in times {
        let sqlite: String = stmt.query_row([ms], |r| r.get(0)).unwrap();
        assert_eq!(timestamp_text(ms), sqlite, "{ms}");
    }
}

#[test]
fn comparisons_bound_the_time_as_text_compares() {
    let at = "2026-01-01T01:00:00.000Z";
    assert_eq!(
        scope(&format!(
            "SELECT * FROM historian WHERE timestamp >= '{at}'"
        )),
        range(T0 + HOUR, i64::MAX)
    );
    assert_eq!(
        scope(&format!("SELECT * FROM historian WHERE timestamp > '{at}'")),
        range(T0 + HOUR + 1, i64::MAX)
    );
    assert_eq!(
        scope(&format!("SELECT * FROM historian WHERE timestamp < '{at}'")),
        range(i64::MIN, T0 + HOUR)
    );
    assert_eq!(
        scope(&format!(
            "SELECT * FROM historian WHERE timestamp <= '{at}'"
        )),
        range(i64::MIN, T0 + HOUR + 1)
    );
    assert_eq!(
        scope(&format!("SELECT * FROM historian WHERE timestamp = '{at}'")),
        range(T0 + HOUR, T0 + HOUR + 1)
    );
    // Without milliseconds, '...:00Z' sorts after every '...:00.mmmZ': text, not time.
    assert_eq!(
        scope("SELECT * FROM historian WHERE timestamp >= '2026-01-01T01:00:00Z'"),
        range(T0 + HOUR + 1000, i64::MAX)
    );
    // A bare date is a prefix: every time of that day sorts after it.
    assert_eq!(
        scope("SELECT * FROM historian WHERE timestamp BETWEEN '2026-01-01' AND '2026-01-02'"),
        range(T0, T0 + 24 * HOUR)
    );
    assert_eq!(
        scope(&format!("SELECT * FROM historian WHERE '{at}' > timestamp")),
        range(i64::MIN, T0 + HOUR)
    );
    assert_eq!(
        scope(
            "SELECT * FROM historian WHERE timestamp IN \
             ('2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00.000Z')"
        ),
        range(T0, T0 + HOUR + 1)
    );
}

#[test]
fn conjuncts_intersect_and_topics_are_kept() {
    let s = scope(
        "SELECT avg(h.value) FROM historian AS h WHERE (h.timestamp >= '2026-01-01' \
         AND h.topic IN ('a/b', 'c')) AND h.value > 3 AND h.timestamp < '2026-01-01T02' \
         AND h.topic = 'c'",
    );
    assert_eq!(s.start_ms, T0);
    assert_eq!(s.end_ms, T0 + 2 * HOUR);
    assert_eq!(s.topics, topics(&["c"]));
    assert!(s.has_topic("c") && !s.has_topic("a/b"));
    let none = scope("SELECT * FROM historian WHERE topic = 'a' AND topic = 'b'");
    assert!(none.is_empty());
    let backwards = scope(
        "SELECT * FROM historian WHERE timestamp > '2026-02-01' AND timestamp < '2026-01-01'",
    );
    assert!(backwards.is_empty());
}

#[test]
fn inner_joins_and_subqueries_use_qualified_columns() {
    let s = scope(
        "SELECT o.id, h.value FROM orders o JOIN historian h ON h.topic = o.line \
         WHERE h.timestamp >= '2026-01-01' AND timestamp < '2027'",
    );
    // The bare `timestamp` could be another relation's column here: not used.
    assert_eq!(s, range(T0, i64::MAX));
    let s = scope(
        "SELECT * FROM orders WHERE qty > (SELECT max(value) FROM historian \
         WHERE topic = 'x' AND timestamp >= '2026-01-01')",
    );
    assert_eq!(
        s,
        HistorianScope {
            start_ms: T0,
            end_ms: i64::MAX,
            topics: topics(&["x"])
        }
    );
}

#[test]
fn occurrences_add_up() {
    let s = scope(
        "SELECT value FROM historian WHERE topic = 'a' AND timestamp >= '2026-01-01T05' \
         UNION ALL SELECT value FROM HISTORIAN WHERE topic = 'b' AND timestamp < '2026-01-01T01'",
    );
    assert_eq!(
        s,
        HistorianScope {
            start_ms: i64::MIN,
            end_ms: i64::MAX,
            topics: topics(&["a", "b"])
        }
    );
    let s = scope(
        "WITH t AS (SELECT * FROM historian WHERE timestamp >= '2026-01-01T05' \
         AND timestamp < '2026-01-01T06') \
         SELECT * FROM t, historian h WHERE h.timestamp >= '2026-01-01T01' \
         AND h.timestamp < '2026-01-01T02'",
    );
    assert_eq!(s, range(T0 + HOUR, T0 + 6 * HOUR));
    let s = scope(
        "SELECT * FROM historian WHERE timestamp >= '2026-01-01T05' \
         UNION SELECT * FROM historian",
    );
    assert_eq!(s, HistorianScope::everything());
}

#[test]
fn what_is_not_understood_pushes_nothing() {
    for sql in [
        "SELECT * FROM historian",
        "SELECT * FROM historian WHERE timestamp >= '2026-01-01' OR topic = 'a'",
        "SELECT * FROM historian WHERE NOT timestamp >= '2026-01-01'",
        "SELECT * FROM historian WHERE timestamp NOT BETWEEN '2026-01-01' AND '2026-01-02'",
        "SELECT * FROM historian WHERE timestamp NOT IN ('2026-01-01')",
        "SELECT * FROM historian WHERE timestamp <> '2026-01-01'",
        "SELECT * FROM historian WHERE timestamp >= 5",
        "SELECT * FROM historian WHERE timestamp >= \"2026\"",
        "SELECT * FROM historian WHERE timestamp >= '2026' COLLATE NOCASE",
        "SELECT * FROM historian WHERE substr(timestamp, 1, 4) >= '2026'",
        "SELECT * FROM historian WHERE timestamp >= (SELECT max(created_dt) FROM orders)",
        "SELECT * FROM historian WHERE topic LIKE 'a%'",
        "SELECT * FROM historian WHERE value = 'a'",
        "SELECT * FROM historian h WHERE x.timestamp >= '2026-01-01'",
        "SELECT * FROM historian h(a, b, c) WHERE b >= '2026-01-01'",
        "SELECT * FROM historian AS h(topic, timestamp, value) WHERE timestamp >= '2026'",
        "SELECT * FROM orders o LEFT JOIN historian h ON h.topic = o.line \
         WHERE h.timestamp >= '2026-01-01'",
        "SELECT * FROM historian h LEFT JOIN orders o ON h.topic = o.line \
         WHERE h.timestamp >= '2026-01-01'",
        "SELECT * FROM orders o JOIN historian h ON h.topic = o.line AND \
         h.timestamp >= '2026-01-01'",
        "SELECT * FROM orders o JOIN historian h USING (topic) WHERE topic = 'a'",
        "SELECT * FROM orders o JOIN (historian h JOIN orders p ON p.id = h.topic) \
         ON o.id = h.topic WHERE h.timestamp >= '2026-01-01'",
        "SELECT * FROM orders o, historian h WHERE timestamp >= '2026-01-01'",
        "SELECT (SELECT count(*) FROM historian) FROM historian WHERE timestamp >= '2026'",
    ] {
        assert_eq!(scope(sql), HistorianScope::everything(), "{sql}");
    }
}

proptest! {
    /// For any literal, the bound found is exact: a time's text passes the comparison iff the
    /// time lies past the bound.
    #[test]
    fn bisection_finds_where_the_text_starts_to_compare_greater(
        at in TEXT_MIN_MS..=TEXT_MAX_MS,
        probe in -2_000i64..2_000,
        cut in 0usize..=24,
        tail in "[ -~]{0,3}",
    ) {
        let mut literal = timestamp_text(at);
        literal.truncate(cut);
        literal.push_str(&tail);
        let t = (at + probe * 997).clamp(TEXT_MIN_MS, TEXT_MAX_MS);
        let text = timestamp_text(t);
        prop_assert_eq!(text.as_str() >= literal.as_str(), t >= at_or_after(&literal));
        prop_assert_eq!(text.as_str() > literal.as_str(), t >= after(&literal));
    }
}
