//! Which tables `svc migrate` copies, in which order, and how: svc's own SQLite tables with
//! their PostgreSQL counterparts (same names and columns, types as the PostgreSQL migrations
//! declare them), and a domain's record table in its schema. What is left out, and why, is in
//! docs/decisions/postgres.md ("svc migrate").

use super::batch::{col, col_or, Column, Kind, Partitioning, TableCopy, DO_NOTHING};
use crate::ids::TableRef;
use crate::store::postgres::names;

/// Rows per batch of ordinary tables; the historian's points go in bigger ones.
const BATCH_ROWS: usize = 2_000;
const POINT_BATCH_ROWS: usize = 10_000;

fn table(
    name: &str,
    columns: Vec<Column>,
    key: Vec<&'static str>,
    identity: Option<&'static str>,
) -> TableCopy {
    TableCopy {
        label: name.to_string(),
        source: name.to_string(),
        target: names::quoted(name),
        columns,
        key,
        per_instance: false,
        identity,
        on_conflict: DO_NOTHING,
        batch_rows: BATCH_ROWS,
        partitioned: None,
    }
}

fn per_instance(mut copy: TableCopy) -> TableCopy {
    copy.per_instance = true;
    copy
}

/// Identity, the audit trail, functions' code and runs, and upstream passwords: copied before
/// the records.
pub fn system_tables() -> Vec<TableCopy> {
    use Kind::*;
    let mut domains = table(
        "auth_domains",
        vec![col("name", Text), col("created_dt", Text)],
        vec!["name"],
        None,
    );
    // Both engines create `svc_admin` when they first open; the copy keeps SQLite's date.
    domains.on_conflict = "ON CONFLICT (name) DO UPDATE SET created_dt = excluded.created_dt";
    vec![
        domains,
        table(
            "auth_users",
            vec![
                col("key", Text),
                col("username", Text),
                col("password_hash", Text),
                col("admin", Bool),
                col("created_dt", Text),
                col("profile", Text),
            ],
            vec!["key"],
            None,
        ),
        table(
            "auth_groups",
            vec![
                col("domain", Text),
                col("key", Text),
                col("name", Text),
                col("grants", Text),
                col("created_dt", Text),
            ],
            vec!["domain", "key"],
            None,
        ),
        table(
            "auth_group_members",
            vec![
                col("domain", Text),
                col("group_key", Text),
                col("user_key", Text),
            ],
            vec!["domain", "group_key", "user_key"],
            None,
        ),
        table(
            "auth_actions",
            vec![
                col("domain", Text),
                col("feature", Text),
                col("action", Text),
            ],
            vec!["domain", "feature", "action"],
            None,
        ),
        table(
            "auth_scopes",
            vec![col("domain", Text), col("scope", Text)],
            vec!["domain", "scope"],
            None,
        ),
        table(
            "auth_api_keys",
            vec![
                col("key", Text),
                col("user_key", Text),
                col("name", Text),
                col("prefix", Text),
                col("secret_hash", Text),
                col("created_dt", Text),
                col("last_used_dt", Text),
                col("domain", Text),
            ],
            vec!["key"],
            None,
        ),
        table(
            "audit_log",
            vec![
                col("id", BigInt),
                col("time", Text),
                col("domain", Text),
                col("user_id", Text),
                col("username", Text),
                col("via", Text),
                col("action", Text),
                col("resource_type", Text),
                col("resource_id", Text),
                col("summary", Text),
                col("correlation_id", Text),
            ],
            vec!["id"],
            Some("id"),
        ),
        table(
            "fn_versions",
            vec![
                col("domain", Text),
                col("name", Text),
                col("version", BigInt),
                col("language", Text),
                col("module", Bool),
                col("code", Text),
                col("modules", Text),
                col("created_dt", Text),
            ],
            vec!["domain", "name", "version"],
            None,
        ),
        table(
            "fn_runs",
            vec![
                col("id", BigInt),
                col("domain", Text),
                col("kind", Text),
                col("name", Text),
                col("started_dt", Text),
                col("trigger", Text),
                col("duration_ms", BigInt),
                col("success", Bool),
                col("error", Text),
                col("logs", Text),
                col("output", Text),
            ],
            vec!["id"],
            Some("id"),
        ),
        table(
            "upstream_secrets",
            vec![
                col("domain", Text),
                col("upstream", Text),
                col("password", Text),
            ],
            vec!["domain", "upstream"],
            None,
        ),
        table(
            "connector_secrets",
            vec![
                col("domain", Text),
                col("connector", Text),
                col("password", Text),
            ],
            vec!["domain", "connector"],
            None,
        ),
        table(
            "connector_identity",
            vec![
                col("id", Int),
                col("certificate", Bytes),
                col("private_key", Bytes),
            ],
            vec!["id"],
            None,
        ),
        table(
            "connector_certificates",
            vec![
                col("domain", Text),
                col("thumbprint", Text),
                col("certificate", Bytes),
                col("state", Text),
                col("first_seen_ms", BigInt),
            ],
            vec!["domain", "thumbprint"],
            None,
        ),
    ]
}

/// A domain's record table (`"<domain>.<table>"` in SQLite) into its schema's table.
pub fn record_table(table: &TableRef) -> TableCopy {
    use Kind::*;
    TableCopy {
        label: table.qualified(),
        source: table.qualified(),
        target: names::table(table),
        columns: vec![
            col("key", Text),
            col("data", Json),
            col("created_dt", Text),
            col("updated_dt", Text),
        ],
        key: vec!["key"],
        per_instance: false,
        identity: None,
        on_conflict: DO_NOTHING,
        batch_rows: BATCH_ROWS,
        partitioned: None,
    }
}

/// The historian: series (ids kept, so points need no mapping), then points.
pub fn historian_tables() -> Vec<TableCopy> {
    use Kind::*;
    let mut points = table(
        "hist_points",
        vec![
            col("series", BigInt),
            col("ts", BigInt),
            col("seq", Int),
            col("num", Float),
            col("value", Text),
            col_or("quality", BigInt, "0"),
        ],
        vec!["series", "ts", "seq"],
        None,
    );
    points.batch_rows = POINT_BATCH_ROWS;
    points.partitioned = Some(Partitioning::Points);
    let mut blocks = table(
        "hist_blocks",
        vec![
            col("id", BigInt),
            col("series", BigInt),
            col("start_ts", BigInt),
            col("end_ts", BigInt),
            col("count", BigInt),
            col("num_count", BigInt),
            col("min", Float),
            col("max", Float),
            col("sum", Float),
            col("first_seq", BigInt),
            col("first_value", Text),
            col("last_seq", BigInt),
            col("last_value", Text),
            col("data", Bytes),
        ],
        vec!["id"],
        Some("id"),
    );
    // Blocks are a few kilobytes each: fewer to a batch than rows.
    blocks.batch_rows = BATCH_ROWS / 10;
    blocks.partitioned = Some(Partitioning::Blocks);
    vec![
        table(
            "hist_series",
            vec![
                col("id", BigInt),
                col("domain", Text),
                col("topic", Text),
                col("sealed_upto", BigInt),
            ],
            vec!["id"],
            Some("id"),
        ),
        points,
        blocks,
    ]
}

/// The broker's durable state and the upstream outbox: state of the instance that ran on the
/// data dir, copied as that same instance's (see `instance.id`).
pub fn instance_tables() -> Vec<TableCopy> {
    use Kind::*;
    let message = |first: Vec<Column>| {
        let mut columns = first;
        columns.extend([
            col("topic", Text),
            col("payload", Bytes),
            col("qos", SmallInt),
            col("retain", Bool),
            col("properties", Bytes),
            col("received_ms", BigInt),
            col("expires_at_ms", BigInt),
        ]);
        columns
    };
    vec![
        per_instance(table("mqtt_retained", message(vec![]), vec!["topic"], None)),
        per_instance(table(
            "mqtt_sessions",
            vec![
                col("client_id", Text),
                col("owner", Text),
                col("expiry_secs", BigInt),
                col("disconnected_at_ms", BigInt),
            ],
            vec!["client_id"],
            None,
        )),
        per_instance(table(
            "mqtt_subscriptions",
            vec![
                col("client_id", Text),
                col("filter", Text),
                col("options", Bytes),
            ],
            vec!["client_id", "filter"],
            None,
        )),
        per_instance(table(
            "mqtt_queue",
            message(vec![
                col("client_id", Text),
                col("seq", BigInt),
                col("packet_id", Int),
                col("state", SmallInt),
            ]),
            vec!["client_id", "seq"],
            None,
        )),
        per_instance(table(
            "mqtt_inbound_qos2",
            vec![col("client_id", Text), col("packet_id", Int)],
            vec!["client_id", "packet_id"],
            None,
        )),
        per_instance(table(
            "upstream_outbox",
            vec![
                col("seq", BigInt),
                col("upstream", Text),
                col("topic", Text),
                col("payload", Bytes),
                col("qos", SmallInt),
                col("retain", Bool),
                col("hops", SmallInt),
                col("enqueued_ms", BigInt),
                col("binding", BigInt),
            ],
            vec!["seq"],
            None,
        )),
    ]
}
