//! The values the storage interface takes and returns, shared by both engines: what a caller
//! of [`super::Store`] sees, with no trace of SQL.

use super::{StoreError, StoreResult};
use crate::functions::CodeVersion;
use crate::ids::{TableRef, ADMIN_DOMAIN};
use crate::model::{ApiKeyInfo, Domain, Grant, Group, GroupFeature, NamedGrant, User, UserProfile};
use crate::time::now_rfc3339;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Which engine runs and where: the `storage` part of `GET /svc/`.
#[derive(Debug, Clone)]
pub struct StorageDescription {
    pub engine: &'static str,
    /// SQLite's database file.
    pub path: Option<String>,
    /// PostgreSQL's `host:port`, database and server version.
    pub host: Option<String>,
    pub database: Option<String>,
    pub server_version: Option<String>,
}

// ---- Audit trail ----

/// One administrative change. `summary` is a JSON object already cleared of secrets.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditEntry {
    pub id: i64,
    /// RFC 3339 UTC with milliseconds, so text order is time order.
    pub time: String,
    pub domain: String,
    pub user_id: String,
    pub username: String,
    /// `token` or `api_key`: which credential made the change.
    pub via: String,
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub summary: serde_json::Value,
    pub correlation_id: String,
}

/// Which entries a query returns; every filter is optional and they are ANDed.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub domain: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    /// A user id (`svc_admin.users:<key>`) or a username.
    pub user: Option<String>,
    pub resource_type: Option<String>,
    pub action: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

// ---- Identity ----

/// A user as the server needs it to authorize requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthUser {
    pub key: String,
    pub username: String,
    pub admin: bool,
    pub created_dt: String,
}

impl AuthUser {
    /// The user's RecordID, the `sub` of its tokens.
    pub fn id(&self) -> String {
        user_id(&self.key)
    }

    /// The API's view of the user, with its profile and the group ids the viewer may see.
    pub fn to_model(&self, profile: UserProfile, group_ids: Vec<String>) -> User {
        User {
            id: self.id(),
            username: self.username.clone(),
            admin: self.admin,
            created_dt: self.created_dt.clone(),
            created_dt_sdk: self.created_dt.clone(),
            profile,
            group_ids,
        }
    }
}

pub fn user_id(key: &str) -> String {
    format!("{ADMIN_DOMAIN}.users:{key}")
}

pub fn group_id(domain: &str, key: &str) -> String {
    format!("{domain}.groups:{key}")
}

pub fn api_key_id(key: &str) -> String {
    format!("{ADMIN_DOMAIN}.api_keys:{key}")
}

impl AuthUser {
    /// A new user, with a fresh key, created now.
    pub fn fresh(username: &str, admin: bool) -> AuthUser {
        AuthUser {
            key: crate::ids::new_key(),
            username: username.to_string(),
            admin,
            created_dt: now_rfc3339(),
        }
    }
}

/// A domain as the API shows it.
pub fn domain_model(name: String, created_dt: String) -> Domain {
    Domain {
        id: format!("domains:{name}"),
        name,
        created_dt,
    }
}

/// An API key as the API shows it (its owner filled in by the callers that list everyone's).
pub fn api_key_model(
    key: &str,
    name: String,
    prefix: String,
    created_dt: String,
    last_used_dt: Option<String>,
) -> ApiKeyInfo {
    ApiKeyInfo {
        id: api_key_id(key),
        name,
        prefix,
        created_dt,
        last_used_dt,
        user_id: None,
    }
}

/// Every grant a user holds in one domain, through all of its groups there.
#[derive(Debug, Clone, Default)]
pub struct GrantSet(pub Vec<Grant>);

impl GrantSet {
    /// Actions granted for `feature` at `scope` (grants on scope `*` count everywhere);
    /// `read-write` implies `read`. Sorted and deduplicated.
    pub fn actions(&self, feature: &str, scope: &str) -> Vec<String> {
        let mut actions: Vec<String> = self
            .0
            .iter()
            .filter(|g| g.feature == feature && (g.scope == scope || g.scope == "*"))
            .flat_map(|g| {
                if g.action == "read-write" {
                    vec!["read".to_string(), g.action.clone()]
                } else {
                    vec![g.action.clone()]
                }
            })
            .collect();
        actions.sort();
        actions.dedup();
        actions
    }
}

impl GrantSet {
    /// The grants in the SDK's shape, deduplicated.
    pub fn named(&self) -> Vec<NamedGrant> {
        let mut named: Vec<NamedGrant> = self
            .0
            .iter()
            .map(|g| NamedGrant {
                name: g.feature.clone(),
                action: g.action.clone(),
                scope: g.scope.clone(),
            })
            .collect();
        named.sort_by(|a, b| (&a.name, &a.scope, &a.action).cmp(&(&b.name, &b.scope, &b.action)));
        named.dedup();
        named
    }
}

/// What an administrator holds in a domain: `read` and `read-write` on the platform's own
/// features and every feature with custom actions, plus those actions, at scope `*`. `custom`
/// is the domain's (feature, action) pairs.
pub fn admin_grants(custom: &[(String, String)]) -> Vec<NamedGrant> {
    // Every feature a route checks (the system tables' included), so that an
    // administrator's effective permissions say what the routes allow.
    const BUILT_IN: [&str; 12] = [
        "api_keys",
        "audit",
        "collections",
        "flows",
        "groups",
        "historian",
        "logs",
        "namespace",
        "processes",
        "tags",
        "upstreams",
        "users",
    ];
    let mut features: Vec<String> = BUILT_IN.iter().map(|f| f.to_string()).collect();
    features.extend(custom.iter().map(|(f, _)| f.clone()));
    features.sort();
    features.dedup();
    let grant = |name: &str, action: &str| NamedGrant {
        name: name.to_string(),
        action: action.to_string(),
        scope: "*".to_string(),
    };
    let mut all = Vec::new();
    for feature in &features {
        all.push(grant(feature, "read"));
        all.push(grant(feature, "read-write"));
        for (_, action) in custom.iter().filter(|(f, _)| f == feature) {
            all.push(grant(feature, action));
        }
    }
    all
}

/// `current` with those of `added` it lacks, in order.
pub fn merged_grants(mut current: Vec<Grant>, added: &[Grant]) -> Vec<Grant> {
    for grant in added {
        if !current.contains(grant) {
            current.push(grant.clone());
        }
    }
    current
}

/// A group as the API shows it; members are filled in by the caller that lists them.
pub fn group_model(domain: &str, key: &str, name: String, grants: Vec<Grant>) -> Group {
    let features = grants
        .iter()
        .map(|g| GroupFeature {
            name: g.feature.clone(),
            action: g.action.clone(),
            domain: format!("domains:{domain}"),
            scope: g.scope.clone(),
        })
        .collect();
    Group {
        id: group_id(domain, key),
        name,
        domain: format!("domains:{domain}"),
        grants,
        features,
        user_ids: Vec::new(),
    }
}

// ---- Functions and flows ----

/// Runs kept per function or flow; older ones are deleted as new ones arrive.
pub const RUNS_KEPT: i64 = 1000;
/// One insert in this many (on average) trims its owner's log back to [`RUNS_KEPT`].
pub const PRUNE_EVERY: u32 = 50;

/// Whose runs: a function's or a flow's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOwner {
    Function,
    Flow,
}

impl RunOwner {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOwner::Function => "function",
            RunOwner::Flow => "flow",
        }
    }
}

/// A version stamped now.
pub fn version_now(version: u64, def: &crate::functions::FunctionDef) -> CodeVersion {
    CodeVersion {
        version,
        language: def.language.clone(),
        module: def.module,
        code: def.code.clone(),
        modules: def.modules.clone(),
        created_dt: now_rfc3339(),
    }
}

// ---- Historian ----

/// One value to historize.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWrite {
    pub domain: String,
    pub topic: String,
    pub ts_ms: i64,
    pub value: Value,
}

/// One stored value, or one bucket of an aggregate query (then `ts_ms` is the bucket start).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub ts_ms: i64,
    pub value: Value,
}

/// The numeric reading of a value: a JSON number, or a bool as 0/1.
pub fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// An aggregate as JSON: whole numbers (that fit a double exactly) as integers, NULL as null.
pub fn number_json(x: Option<f64>) -> Value {
    match x {
        Some(x) if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 => Value::from(x as i64),
        Some(x) => Value::from(x),
        None => Value::Null,
    }
}

/// Buckets between consecutive `edges` (ascending): bucket `i` covers `[edges[i], edges[i + 1])`
/// cut to the window `start_ms..end_ms` and is stamped `edges[i]`, even when the window starts
/// later. `fixed(lo, hi)` aggregates one cut bucket as a single fixed bucket (at most one
/// point). For buckets of unequal length, such as local days across a DST change.
pub fn buckets_between(
    start_ms: i64,
    end_ms: i64,
    edges: &[i64],
    mut fixed: impl FnMut(i64, i64) -> StoreResult<Vec<HistoryPoint>>,
) -> StoreResult<Vec<HistoryPoint>> {
    let mut points = Vec::new();
    for pair in edges.windows(2) {
        let (lo, hi) = (pair[0].max(start_ms), pair[1].min(end_ms));
        if lo >= hi {
            continue;
        }
        for point in fixed(lo, hi)? {
            points.push(HistoryPoint {
                ts_ms: pair[0],
                ..point
            });
        }
    }
    Ok(points)
}

// ---- Broker state ----

/// A PUBLISH as kept for a retained topic or a session's queue.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    /// Opaque, encoded by the broker.
    pub properties: Vec<u8>,
    pub received_ms: i64,
    pub expires_at_ms: Option<i64>,
}

/// One subscription of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSubscription {
    pub filter: String,
    /// Opaque, encoded by the broker.
    pub options: Vec<u8>,
}

/// A message in a session's queue and how far its delivery got.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedMessage {
    pub seq: i64,
    pub packet_id: Option<u16>,
    /// 0 queued, 1 sent awaiting PUBACK/PUBREC, 2 PUBREC received awaiting PUBCOMP.
    pub state: u8,
    pub message: StoredMessage,
}

/// A persistent session with everything it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    pub client_id: String,
    /// User key of the principal that owns the session.
    pub owner: String,
    pub expiry_secs: u32,
    /// `None` while connected.
    pub disconnected_at_ms: Option<i64>,
    pub subscriptions: Vec<StoredSubscription>,
    /// Ordered by seq.
    pub queue: Vec<QueuedMessage>,
    /// Packet ids received at QoS 2 awaiting PUBREL.
    pub inbound_qos2: Vec<u16>,
}

/// One change to the broker's state; see [`Store::mqtt_write`].
#[derive(Debug, Clone, PartialEq)]
pub enum MqttWrite {
    PutRetained(StoredMessage),
    DeleteRetained {
        topic: String,
    },
    /// Upsert; keeps the session's subscriptions, queue and inbound ids.
    PutSession {
        client_id: String,
        owner: String,
        expiry_secs: u32,
        disconnected_at_ms: Option<i64>,
    },
    /// The session and its subscriptions, queue and inbound ids.
    DeleteSession {
        client_id: String,
    },
    /// Upsert by (client_id, filter).
    PutSubscription {
        client_id: String,
        subscription: StoredSubscription,
    },
    DeleteSubscription {
        client_id: String,
        filter: String,
    },
    /// A seq the session already holds is a conflict (and fails the batch).
    Enqueue {
        client_id: String,
        seq: i64,
        message: StoredMessage,
    },
    /// No change when the message is no longer queued.
    SetDelivery {
        client_id: String,
        seq: i64,
        packet_id: Option<u16>,
        state: u8,
    },
    Dequeue {
        client_id: String,
        seq: i64,
    },
    /// Idempotent: a duplicate QoS 2 PUBLISH may carry the same id again.
    PutInboundQos2 {
        client_id: String,
        packet_id: u16,
    },
    DeleteInboundQos2 {
        client_id: String,
        packet_id: u16,
    },
}

/// Refuses a QoS that MQTT does not have.
pub fn check_qos(qos: u8) -> StoreResult<()> {
    if qos > 2 {
        return Err(StoreError::Invalid(format!("QoS {qos} is not 0, 1 or 2")));
    }
    Ok(())
}

impl MqttWrite {
    /// What the write is, for an error message.
    pub fn label(&self) -> String {
        match self {
            MqttWrite::PutRetained(m) => format!("retain on `{}`", m.topic),
            MqttWrite::DeleteRetained { topic } => format!("delete retained on `{topic}`"),
            MqttWrite::PutSession { client_id, .. } => format!("put session `{client_id}`"),
            MqttWrite::DeleteSession { client_id } => format!("delete session `{client_id}`"),
            MqttWrite::PutSubscription {
                client_id,
                subscription,
            } => format!("subscribe `{client_id}` to `{}`", subscription.filter),
            MqttWrite::DeleteSubscription { client_id, filter } => {
                format!("unsubscribe `{client_id}` from `{filter}`")
            }
            MqttWrite::Enqueue { client_id, seq, .. } => {
                format!("enqueue #{seq} for `{client_id}`")
            }
            MqttWrite::SetDelivery { client_id, seq, .. } => {
                format!("delivery state of #{seq} for `{client_id}`")
            }
            MqttWrite::Dequeue { client_id, seq } => format!("dequeue #{seq} for `{client_id}`"),
            MqttWrite::PutInboundQos2 {
                client_id,
                packet_id,
            } => format!("inbound QoS 2 id {packet_id} of `{client_id}`"),
            MqttWrite::DeleteInboundQos2 {
                client_id,
                packet_id,
            } => format!("release inbound QoS 2 id {packet_id} of `{client_id}`"),
        }
    }
}

/// The session a child row belongs to (`index`: client id → position in `sessions`).
pub fn session_of<'s>(
    sessions: &'s mut [StoredSession],
    index: &HashMap<String, usize>,
    client_id: &str,
) -> StoreResult<&'s mut StoredSession> {
    let i = index.get(client_id).copied().ok_or_else(|| {
        StoreError::Internal(format!("stored MQTT row of unknown session `{client_id}`"))
    })?;
    Ok(&mut sessions[i])
}

// ---- Records ----

/// An update's check, as [`Store::update_record`] takes it.
pub type UpdateCheck =
    Box<dyn FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String> + Send>;

/// One record write of a group.
pub enum RecordWrite {
    Insert {
        table: TableRef,
        key: String,
        fields: Map<String, Value>,
    },
    Update {
        table: TableRef,
        key: String,
        patch: Map<String, Value>,
        check: UpdateCheck,
    },
    Delete {
        table: TableRef,
        key: String,
    },
}

impl RecordWrite {
    pub fn table(&self) -> &TableRef {
        match self {
            RecordWrite::Insert { table, .. }
            | RecordWrite::Update { table, .. }
            | RecordWrite::Delete { table, .. } => table,
        }
    }
}

/// What a committed write did.
#[derive(Debug)]
pub enum RecordWritten {
    /// The record as stored by an insert or an update.
    Record(Value),
    /// The update's or delete's record does not exist.
    Absent,
    /// The delete removed the record.
    Deleted,
}

/// Name of the system table holding a domain's collection definitions.
pub const COLLECTIONS: &str = "collections";

/// Drops the server-owned fields from a document before it is stored.
pub fn stored_fields(fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .filter(|(k, _)| !crate::schema::is_system_field(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The record as the API returns it, from what was just written (no read back); the same
/// members in the same order as the engines' record texts give.
pub fn written_record(
    table: &TableRef,
    key: &str,
    stored: Map<String, Value>,
    created: &str,
    updated: &str,
) -> Value {
    let mut record = Map::new();
    record.insert("id".into(), Value::String(table.record_id(key)));
    record.insert("created_dt".into(), Value::String(created.into()));
    record.insert("updated_dt".into(), Value::String(updated.into()));
    record.extend(stored);
    Value::Object(record)
}

/// A collection definition from its record in the domain's `collections` table.
pub fn collection_of_record(
    record: Option<Value>,
) -> StoreResult<Option<crate::schema::Collection>> {
    let Some(Value::Object(mut doc)) = record else {
        return Ok(None);
    };
    for system in ["id", "created_dt", "updated_dt"] {
        doc.remove(system);
    }
    Ok(Some(serde_json::from_value(Value::Object(doc))?))
}

// ---- Reports ----

/// How long a report may run and how many rows it may return.
#[derive(Debug, Clone, Copy)]
pub struct ReportLimits {
    pub timeout: Duration,
    pub max_rows: usize,
}

/// A relation a report names, resolved in the active domain.
pub enum ReportRelation {
    Historian,
    Table(TableRef),
}

/// Each relation of a report query as the historian or one of `tables` (the domain's; names
/// match case-insensitively); anything else → 400.
pub fn resolve_report_relations(
    domain: &str,
    query: &crate::report_sql::CheckedQuery,
    tables: &[String],
) -> StoreResult<Vec<(String, ReportRelation)>> {
    use crate::report_sql::HISTORIAN;
    let mut relations = Vec::with_capacity(query.relations.len());
    for relation in &query.relations {
        if relation == HISTORIAN {
            relations.push((relation.clone(), ReportRelation::Historian));
            continue;
        }
        let Some(table) = tables.iter().find(|t| t.to_lowercase() == *relation) else {
            return Err(StoreError::Invalid(format!(
                "relation `{relation}` is neither `{HISTORIAN}` nor a table of domain `{domain}`"
            )));
        };
        let table = TableRef::new(domain, table).map_err(StoreError::Invalid)?;
        relations.push((relation.clone(), ReportRelation::Table(table)));
    }
    Ok(relations)
}

// ---- Tags ----

/// Name of the system table holding a domain's tags.
pub const TAGS: &str = "tags";
/// Name of the per-domain system table holding the domain's namespaces (UNS branches).
pub const NAMESPACES: &str = "namespaces";

/// What the registry keeps of a tag record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub path: String,
    pub historize: bool,
    /// The tag's own historian retention (a duration such as `30d`), if it has one.
    pub retention: Option<String>,
    /// When the tag was declared (RFC 3339), which decides ownership between old duplicates.
    pub created: String,
    pub unit: Option<String>,
}

// ---- Upstreams ----

/// An upstream record's key, fields and password.
pub type StoredUpstream = (String, Map<String, Value>, Option<String>);

/// Sorted runs of consecutive numbers, as (first, last).
pub fn seq_runs(seqs: &[i64]) -> Vec<(i64, i64)> {
    let mut sorted = seqs.to_vec();
    sorted.sort_unstable();
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for seq in sorted {
        match runs.last_mut() {
            Some((_, last)) if seq <= *last + 1 => *last = seq.max(*last),
            _ => runs.push((seq, seq)),
        }
    }
    runs
}
