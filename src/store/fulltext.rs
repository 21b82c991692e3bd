//! Full-text matching for the `@@` filter: every word of the query is a word of the field.
//! Words are maximal runs of letters and digits, compared in lower case; a field holding an
//! array or object is matched on the words of its JSON text (so any element's words count).
//! Registered on every connection as `svc_words_match(field, query)`.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use std::collections::HashSet;

/// The lower-case words of a text.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Whether every word of `query` is a word of `field` (a query without words matches nothing).
pub fn words_match(field: &str, query: &str) -> bool {
    let have: HashSet<String> = words(field).collect();
    let mut wanted = words(query).peekable();
    wanted.peek().is_some() && wanted.all(|w| have.contains(&w))
}

/// Registers `svc_words_match` on a connection.
pub fn register(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "svc_words_match",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text = |i: usize| -> rusqlite::Result<Option<String>> {
                Ok(match ctx.get_raw(i) {
                    ValueRef::Null => None,
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                    ValueRef::Integer(n) => Some(n.to_string()),
                    ValueRef::Real(x) => Some(x.to_string()),
                })
            };
            Ok(match (text(0)?, text(1)?) {
                (Some(field), Some(query)) => words_match(&field, &query),
                _ => false,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_word_must_be_a_whole_word_of_the_field() {
        assert!(words_match("Pump 7 — Main Hall", "main pump"));
        assert!(words_match("[\"north\",\"Boiler room\"]", "boiler"));
        assert!(!words_match("Pumping station", "pump"), "whole words only");
        assert!(!words_match("Pump 7", "pump 8"));
        assert!(!words_match("anything", " ,; "), "no words, no match");
        assert!(words_match("Überdruck-Ventil", "überdruck ventil"));
    }

    #[test]
    fn the_sql_function_matches_like_the_rust_one() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let hit: bool = conn
            .query_row(
                "SELECT svc_words_match('Main pump, hall B', 'PUMP b')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(hit);
        let null: bool = conn
            .query_row("SELECT svc_words_match(NULL, 'x')", [], |r| r.get(0))
            .unwrap();
        assert!(!null);
    }
}
