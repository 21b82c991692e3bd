//! SqliteStore tests on a temporary SQLite file: record round trips, filters translated to SQL,
//! collections with their indexes, and that indexed filters really use the index.

use super::*;
use crate::ids::TableRef;
use crate::query::{self, ListQuery};
use crate::schema::Collection;
use crate::store::interface::*;
use serde_json::{json, Map, Value};

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.db")).unwrap();
    (dir, store)
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn q(pairs: &[(&str, &str)]) -> ListQuery {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    query::parse(&pairs).unwrap()
}

/// SQLite's plan (the `detail` column) for the filters of `query` over `table`.
fn query_plan(
    store: &SqliteStore,
    table: &TableRef,
    query: &ListQuery,
    searchable: &std::collections::HashSet<String>,
) -> Vec<String> {
    let where_ = super::filter_sql::build_where(table, &query.filters, &[], searchable);
    let conn = store.conn().unwrap();
    let sql = format!(
        "EXPLAIN QUERY PLAN SELECT key FROM {} WHERE {}",
        quoted(&table.qualified()),
        where_.sql
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(where_.params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn keys(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            r["id"]
                .as_str()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn seeded() -> (tempfile::TempDir, SqliteStore, TableRef) {
    let (dir, store) = store();
    let t = TableRef::new("acme", "items").unwrap();
    let rows = [
        (
            "a",
            json!({"n": 1, "s": "alpha", "ok": true, "tags": ["x", "y"], "dims": {"w": 5}}),
        ),
        (
            "b",
            json!({"n": 2, "s": "beta", "ok": false, "tags": ["y"], "dims": {"w": 7}}),
        ),
        (
            "c",
            json!({"n": 3, "s": "gamma ray", "ok": 1, "when": "2026-01-02T00:00:00+02:00"}),
        ),
        (
            "d",
            json!({"s": null, "obj": {"k": 1, "a": [1, 2]}, "when": "2026-01-01T23:00:00Z"}),
        ),
    ];
    for (key, doc) in rows {
        store.insert_record(&t, key, &obj(doc)).unwrap();
    }
    (dir, store, t)
}

#[test]
fn round_trip_and_merge() {
    let (_d, store) = store();
    let t = TableRef::new("acme", "items").unwrap();
    let created = store
        .insert_record(&t, "k1", &obj(json!({"a": 1, "b": "x"})))
        .unwrap();
    assert_eq!(created["id"], "acme.items:k1");
    let updated = store
        .update_record(&t, "k1", &obj(json!({"b": "y", "c": true})), |_, _| Ok(()))
        .unwrap()
        .unwrap();
    assert_eq!(updated["a"], 1);
    assert_eq!(updated["b"], "y");
    assert_eq!(updated["c"], true);
    assert!(matches!(
        store.insert_record(&t, "k1", &Map::new()),
        Err(StoreError::Conflict(_))
    ));
    assert!(store.delete_record(&t, "k1").unwrap());
    assert!(store.get_record(&t, "k1").unwrap().is_none());
    assert!(!store.delete_record(&t, "k1").unwrap());
}

#[test]
fn refused_update_changes_nothing() {
    let (_d, store) = store();
    let t = TableRef::new("acme", "items").unwrap();
    store
        .insert_record(&t, "k1", &obj(json!({"a": 1})))
        .unwrap();
    let err = store
        .update_record(&t, "k1", &obj(json!({"a": "no"})), |_, _| {
            Err("bad a".into())
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)));
    assert_eq!(store.get_record(&t, "k1").unwrap().unwrap()["a"], 1);
}

#[test]
fn missing_tables_read_as_empty() {
    let (_d, store) = store();
    let t = TableRef::new("acme", "never").unwrap();
    assert!(store.list_records(&t, &q(&[])).unwrap().is_empty());
    assert_eq!(store.count_records(&t, &[], &[]).unwrap(), 0);
    assert!(store.get_record(&t, "x").unwrap().is_none());
}

#[test]
fn filters_by_type_and_operator() {
    let (_d, store, t) = seeded();
    let list = |pairs: &[(&str, &str)]| keys(&store.list_records(&t, &q(pairs)).unwrap());
    assert_eq!(list(&[("filter[n][gt][number]", "1")]), ["b", "c"]);
    assert_eq!(list(&[("filter[n][<=][number]", "2")]), ["a", "b"]);
    assert_eq!(list(&[("filter[s][eq][string]", "beta")]), ["b"]);
    assert_eq!(list(&[("filter[s][ne][string]", "beta")]), ["a", "c", "d"]);
    assert_eq!(list(&[("filter[s][contains][string]", "ray")]), ["c"]);
    assert_eq!(list(&[("filter[tags][contains][string]", "y")]), ["a", "b"]);
    assert_eq!(list(&[("filter[ok][eq][boolean]", "true")]), ["a"]);
    assert_eq!(list(&[("filter[ok][eq][boolean]", "false")]), ["b"]);
    assert_eq!(list(&[("filter[s][eq][null]", "")]), ["d"]);
    assert_eq!(list(&[("filter[s][ne][null]", "")]), ["a", "b", "c"]);
    assert_eq!(list(&[("filter[dims.w][gte][number]", "6")]), ["b"]);
    assert_eq!(
        list(&[("filter[obj][eq][object]", r#"{"a":[1,2],"k":1}"#)]),
        ["d"]
    );
    assert_eq!(list(&[("filter[n][in][number]", "1,3")]), ["a", "c"]);
    assert_eq!(list(&[("filter[n][nin][number]", "[1,3]")]), ["b", "d"]);
    // 2026-01-02T00:00+02:00 is before 2026-01-01T23:00Z.
    assert_eq!(
        list(&[("filter[when][lt][date]", "2026-01-01T22:30:00Z")]),
        ["c"]
    );
    assert_eq!(list(&[("filter[id][eq][string]", "acme.items:b")]), ["b"]);
    assert_eq!(
        list(&[
            ("filter[n][gte][number]", "2"),
            ("filter_or[0][s][eq]", "alpha"),
            ("filter_or[1][s][eq]", "beta")
        ]),
        ["b"]
    );
}

#[test]
fn sorts_pages_and_counts() {
    let (_d, store, t) = seeded();
    let list = |pairs: &[(&str, &str)]| keys(&store.list_records(&t, &q(pairs)).unwrap());
    // A missing value sorts as null: first ascending, last descending.
    assert_eq!(list(&[("sort", "[n][desc]")]), ["c", "b", "a", "d"]);
    assert_eq!(list(&[("sort", "[n][asc]")]), ["d", "a", "b", "c"]);
    assert_eq!(
        list(&[("sort", "[n][desc]"), ("limit", "2"), ("offset", "1")]),
        ["b", "a"]
    );
    let n = q(&[("filter[n][gt][number]", "1")]);
    assert_eq!(
        store.count_records(&t, &n.filters, &n.or_filters).unwrap(),
        2
    );
}

#[test]
fn unique_index_conflicts_and_indexed_filters_use_the_index() {
    let (_d, store) = store();
    let products: Collection = serde_json::from_value(json!({
        "name": "products",
        "fields": [{"name": "sku", "type": "string"}, {"name": "line", "type": "string"}],
        "indexDetails": [{"fields": ["sku"], "isUnique": true}, {"fields": ["line"]}]
    }))
    .unwrap();
    store.create_collection("acme", &products).unwrap();
    assert!(matches!(
        store.create_collection("acme", &products),
        Err(StoreError::Conflict(_))
    ));
    let t = TableRef::new("acme", "products").unwrap();
    store
        .insert_record(&t, "p1", &obj(json!({"sku": "A", "line": "l1"})))
        .unwrap();
    let err = store
        .insert_record(&t, "p2", &obj(json!({"sku": "A", "line": "l2"})))
        .unwrap_err();
    match err {
        StoreError::Conflict(m) => assert!(m.contains("sku"), "{m}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(store.collection(&t).unwrap().is_some());

    // Every operator family that can use an index does: equality and ordering (words and the
    // SDK's symbols), and IN / INSIDE lists.
    for (key, value) in [
        ("filter[line][eq][string]", "l1"),
        ("filter[line][==][string]", "l1"),
        ("filter[line][>=][string]", "l0"),
        ("filter[line][<][string]", "l9"),
        ("filter[line][INSIDE][object]", "l1,l2"),
        ("filter[line][IN][string]", "[\"l1\"]"),
    ] {
        let plan = query_plan(&store, &t, &q(&[(key, value)]), &Default::default());
        assert!(
            plan.iter()
                .any(|p| p.contains("USING INDEX") && p.contains("__i__line")),
            "{key}: {plan:?}"
        );
    }

    assert!(store.delete_collection("acme", "products").unwrap());
    assert!(store.collection(&t).unwrap().is_none());
    // The unique index went with the collection; the data stayed.
    store
        .insert_record(&t, "p2", &obj(json!({"sku": "A"})))
        .unwrap();
    assert_eq!(store.count_records(&t, &[], &[]).unwrap(), 2);
}

#[test]
fn unique_index_on_conflicting_data_is_refused_whole() {
    let (_d, store) = store();
    let t = TableRef::new("acme", "dups").unwrap();
    store
        .insert_record(&t, "a", &obj(json!({"sku": "same"})))
        .unwrap();
    store
        .insert_record(&t, "b", &obj(json!({"sku": "same"})))
        .unwrap();
    let dups: Collection = serde_json::from_value(json!({
        "name": "dups", "indexDetails": [{"fields": ["sku"], "isUnique": true}]
    }))
    .unwrap();
    assert!(matches!(
        store.create_collection("acme", &dups),
        Err(StoreError::Conflict(_))
    ));
    assert!(store.collection(&t).unwrap().is_none());
}

#[test]
fn searchable_fields_answer_full_text_from_their_index_like_the_scan_does() {
    let (_dir, store) = store();
    let t = TableRef::new("acme", "assets").unwrap();
    // Records written before the collection exists are indexed when it is created.
    store
        .insert_record(
            &t,
            "a1",
            &obj(json!({"note": "Main pump 7, hall B", "tag": "Main pump"})),
        )
        .unwrap();
    let assets: Collection = serde_json::from_value(json!({
        "name": "assets",
        "fields": [{"name": "note", "type": "string", "searchable": true},
                   {"name": "tag", "type": "string"}]
    }))
    .unwrap();
    store.create_collection("acme", &assets).unwrap();
    store
        .insert_record(
            &t,
            "a2",
            &obj(json!({"note": "Spare pump", "tag": "Spare pump"})),
        )
        .unwrap();
    store
        .insert_record(
            &t,
            "a3",
            &obj(json!({"note": "Überdruck-Ventil", "tag": "Überdruck-Ventil"})),
        )
        .unwrap();
    let both = |words: &str| {
        let indexed = keys(
            &store
                .list_records(&t, &q(&[("filter[note][@@][string]", words)]))
                .unwrap(),
        );
        let scanned = keys(
            &store
                .list_records(&t, &q(&[("filter[tag][@@][string]", words)]))
                .unwrap(),
        );
        assert_eq!(indexed, scanned, "`{words}`: index and scan disagree");
        indexed
    };
    assert_eq!(both("PUMP"), ["a1", "a2"]);
    assert_eq!(both("pump main"), ["a1"]);
    assert_eq!(both("pum"), Vec::<String>::new(), "whole words");
    assert_eq!(both("überdruck"), ["a3"]);
    assert_eq!(both(" ; "), Vec::<String>::new(), "no words, no match");
    assert_eq!(
        both("\"pump\" main*"),
        ["a1"],
        "FTS syntax in the value is just words"
    );

    // The index follows updates and deletes.
    store
        .update_record(
            &t,
            "a2",
            &obj(json!({"note": "Spare valve", "tag": "Spare valve"})),
            |_, _| Ok(()),
        )
        .unwrap();
    assert!(store.delete_record(&t, "a1").unwrap());
    assert_eq!(both("pump"), Vec::<String>::new());
    assert_eq!(both("valve"), ["a2"]);

    // The indexed query reads the FTS5 table, not every record.
    let searchable = super::fulltext::indexed_fields(&store.conn().unwrap(), &t).unwrap();
    let plan = query_plan(
        &store,
        &t,
        &q(&[("filter[note][@@][string]", "valve")]),
        &searchable,
    );
    assert!(plan.iter().any(|p| p.contains("VIRTUAL TABLE")), "{plan:?}");

    // Deleting the collection drops the index and its triggers; the records stay and still match.
    assert!(store.delete_collection("acme", "assets").unwrap());
    assert!(super::fulltext::indexed_fields(&store.conn().unwrap(), &t)
        .unwrap()
        .is_empty());
    store
        .insert_record(&t, "a4", &obj(json!({"note": "new valve"})))
        .unwrap();
    assert_eq!(
        keys(
            &store
                .list_records(&t, &q(&[("filter[note][@@][string]", "valve")]))
                .unwrap()
        ),
        ["a2", "a4"]
    );
}

#[test]
fn grouped_creates_are_indexed_once_and_old_insert_triggers_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("svc.db");
    let t = TableRef::new("acme", "assets").unwrap();
    let index = super::fulltext::index_name(&t, "note");
    let matches = |store: &SqliteStore, word: &str| -> i64 {
        store
            .conn()
            .unwrap()
            .query_row(
                &format!(
                    "SELECT count(*) FROM {} WHERE body MATCH ?1",
                    quoted(&index)
                ),
                [word],
                |r| r.get(0),
            )
            .unwrap()
    };
    {
        let store = SqliteStore::open(&path).unwrap();
        create_searchable_assets(&store);
        // What an index of an older svc also had: an insert trigger, in a database whose
        // steps were not numbered yet.
        store
            .conn()
            .unwrap()
            .execute_batch(&format!(
                "CREATE TRIGGER {} AFTER INSERT ON {} BEGIN \
                 INSERT INTO {}(rowid, body) VALUES (new.rowid, json_extract(new.data, '$.note')); END;",
                quoted(&format!("{index}__ai")),
                quoted(&t.qualified()),
                quoted(&index),
            ))
            .unwrap();
        store
            .conn()
            .unwrap()
            .execute_batch("DROP TABLE svc_schema_migrations")
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let triggers: i64 = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%__ai'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        triggers, 0,
        "the insert trigger is dropped when the store opens"
    );
    let insert = |key: &str, note: &str| RecordWrite::Insert {
        table: t.clone(),
        key: key.into(),
        fields: obj(json!({ "note": note })),
    };
    let written = store.write_records(vec![
        insert("p1", "feed pump"),
        insert("p2", "spare pump"),
        insert("p1", "a taken key"),
        insert("v1", "valve"),
    ]);
    assert!(
        matches!(written[2], Err(StoreError::Conflict(_))),
        "{written:?}"
    );
    assert_eq!(
        matches(&store, "pump"),
        2,
        "each created record is indexed once"
    );
    assert_eq!(
        matches(&store, "taken"),
        0,
        "a refused create is not indexed"
    );
    assert_eq!(
        keys(
            &store
                .list_records(&t, &q(&[("filter[note][@@][string]", "valve")]))
                .unwrap()
        ),
        ["v1"]
    );
}

#[test]
fn a_create_whose_full_text_row_fails_leaves_no_record() {
    let (_dir, store) = store();
    let t = TableRef::new("acme", "assets").unwrap();
    create_searchable_assets(&store);
    store
        .insert_record(&t, "p1", &obj(json!({"note": "pump"})))
        .unwrap();
    // The index vanishes behind the store's back (its remembered fields still name it).
    let index = super::fulltext::index_name(&t, "note");
    store
        .conn()
        .unwrap()
        .execute_batch(&format!(
            "DROP TRIGGER {}; DROP TRIGGER {}; DROP TABLE {};",
            quoted(&format!("{index}__ad")),
            quoted(&format!("{index}__au")),
            quoted(&index)
        ))
        .unwrap();
    let written = store.write_records(vec![RecordWrite::Insert {
        table: t.clone(),
        key: "p2".into(),
        fields: obj(json!({"note": "valve"})),
    }]);
    assert!(written[0].is_err(), "{written:?}");
    assert!(store.get_record(&t, "p2").unwrap().is_none());
    assert!(store.get_record(&t, "p1").unwrap().is_some());
}

/// The collection `acme.assets` with one searchable field, `note`.
fn create_searchable_assets(store: &SqliteStore) {
    let assets: Collection = serde_json::from_value(json!({
        "name": "assets",
        "fields": [{"name": "note", "type": "string", "searchable": true}]
    }))
    .unwrap();
    store.create_collection("acme", &assets).unwrap();
}
