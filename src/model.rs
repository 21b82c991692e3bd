//! Wire types shared by the server and the clients: every JSON shape of the REST API that is
//! not a free-form record lives here, so both sides agree by construction.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LoginResponse {
    pub success: bool,
    pub tkn: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Success {
    pub success: bool,
}

impl Success {
    pub const fn yes() -> Success {
        Success { success: true }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PermissionResponse {
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CountResponse {
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewApiKeyRequest {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewApiKey {
    pub success: bool,
    pub id: String,
    pub name: String,
    /// The full secret; returned only once, at creation.
    pub key: String,
    pub prefix: String,
    pub created_dt: String,
    /// The domain the key was made in (`domains:<name>`); absent when made in `svc_admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApiKeyInfo {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub created_dt: String,
    pub last_used_dt: Option<String>,
    /// The domain the key was made in (`domains:<name>`, the `Domain` header of its creation),
    /// where the topics it publishes first are registered; absent for keys of `svc_admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The owner, in listings of other users' keys (`GET /auth/keys?scope=all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Domain {
    pub id: String,
    pub name: String,
    pub created_dt: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewDomainRequest {
    #[schema(pattern = "^[a-z][a-z0-9_]{0,62}$")]
    pub name: String,
}

/// A user as the API shows it (never its password). `created_dt` is the interface's name,
/// `createdDt` the SDK's; both carry the same time.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct User {
    pub id: String,
    pub username: String,
    pub admin: bool,
    pub created_dt: String,
    #[serde(rename = "createdDt", default)]
    pub created_dt_sdk: String,
    #[serde(flatten)]
    pub profile: UserProfile,
    /// RecordIDs of the groups the user is a member of (those the viewer may see).
    #[serde(default)]
    pub group_ids: Vec<String>,
}

/// The SDK's user profile fields; all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UserProfile {
    #[serde(rename = "firstName", default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    #[serde(rename = "lastName", default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    #[serde(rename = "userImage", default, skip_serializing_if = "Option::is_none")]
    pub user_image: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewUserRequest {
    #[schema(min_length = 1, max_length = 128)]
    pub username: String,
    #[schema(min_length = 8)]
    pub password: String,
    #[serde(default)]
    pub admin: bool,
    #[serde(flatten)]
    pub profile: UserProfile,
    /// Groups (RecordIDs `<domain>.groups:<key>`) to join.
    #[serde(default)]
    pub group_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Grant {
    pub feature: String,
    pub action: String,
    pub scope: String,
}

/// A group: `grants` is the interface's form, `features` the SDK's (the same grants, each with
/// its domain), `user_ids` its members.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Group {
    pub id: String,
    pub name: String,
    pub domain: String,
    pub grants: Vec<Grant>,
    #[serde(default)]
    pub features: Vec<GroupFeature>,
    #[serde(default)]
    pub user_ids: Vec<String>,
}

/// A grant in the SDK's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GroupFeature {
    pub name: String,
    pub action: String,
    #[serde(default)]
    pub domain: String,
    pub scope: String,
}

/// A grant as the SDK sends and lists it: `{"name","action","scope"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NamedGrant {
    pub name: String,
    pub action: String,
    pub scope: String,
}

impl NamedGrant {
    pub fn to_grant(&self) -> Grant {
        Grant {
            feature: self.name.clone(),
            action: self.action.clone(),
            scope: self.scope.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewGroupRequest {
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// The SDK's form of the grants.
    #[serde(default)]
    pub features: Vec<NamedGrant>,
}

/// `POST /auth/permission` in the SDK's form: grants added to a group.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GroupGrants {
    pub group_id: String,
    pub permissions: Vec<NamedGrant>,
}

/// `GET /auth/permission`: the caller's effective grants in the active domain.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PermissionList {
    pub permissions: Vec<NamedGrant>,
}

/// `GET /auth/permission/check/…`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PermissionCheck {
    pub success: bool,
    pub permission: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FeatureActions {
    pub name: String,
    #[serde(default)]
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PermissionImport {
    #[serde(default)]
    pub features: Vec<FeatureActions>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ValidateTokenRequest {
    pub token: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ValidateTokenResponse {
    pub valid: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileRequest {
    #[serde(rename = "fileName")]
    pub file_name: String,
    #[serde(rename = "collectionName")]
    pub collection_name: String,
    #[serde(rename = "fieldName")]
    pub field_name: String,
    #[serde(rename = "recordID")]
    #[schema(
        pattern = "^[a-z][a-z0-9_]{0,62}\\.[A-Za-z_][A-Za-z0-9_]{0,62}:[A-Za-z0-9_-]{1,128}$"
    )]
    pub record_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeviceInfo {
    pub device_name: String,
    pub uns: Uns,
    pub storage: StorageInfo,
    pub version: String,
    /// Whether Python processes run here, and inside which fences (absent from older servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonInfo>,
    /// The newest snapshot of the store this server made (absent when none was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup: Option<BackupInfo>,
}

/// A snapshot of the store: when it was taken, where it went and how big it is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct BackupInfo {
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    /// The file under the data dir for a scheduled snapshot; `null` for one sent to a client
    /// (`svc backup`), whose file is on the client's side.
    pub file: Option<String>,
    pub size_bytes: u64,
    /// `scheduled` or `download`.
    pub kind: String,
}

/// What `GET /svc/` says of Python processes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct PythonInfo {
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Fences that held when the interpreter tried them: `filesystem`, `network`, `signals`,
    /// `fork`, `exec`, `rlimits`.
    #[serde(default)]
    pub sandbox: Vec<String>,
    /// Fences this machine could not set up (Python is unavailable if `filesystem` or
    /// `network` is among them).
    #[serde(default)]
    pub missing: Vec<String>,
    /// Why Python is unavailable, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Uns {
    #[serde(rename = "basePath")]
    pub base_path: String,
    pub bind: Binds,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Binds {
    pub mqtt: Bind,
    pub mqtts: Bind,
    pub ws: Bind,
    pub wss: Bind,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Bind {
    pub host: String,
    pub port: u16,
    pub enabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StorageInfo {
    /// `sqlite` or `postgres`.
    pub engine: String,
    /// SQLite's database file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub size_bytes: u64,
    /// PostgreSQL's `host:port` (never its password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

/// The latest value of a tag (`GET /svc/tag/values`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TagValue {
    pub topic: String,
    pub value: serde_json::Value,
    pub timestamp: String,
}

/// A folder of `GET /svc/namespaces/tree`: the tags and folders one level below `path`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TreeFolder {
    /// The folder's last level ("" for the root of the whole namespace).
    pub name: String,
    pub path: String,
    /// A folder holds folders: utoipa must not follow the type into itself.
    #[serde(default)]
    #[schema(no_recursion)]
    pub folders: Vec<TreeFolder>,
    #[serde(default)]
    pub tags: Vec<TreeTag>,
    /// Below the asked depth: its content is left out (ask again with its path).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A tag in a [`TreeFolder`], with its last value when it has had one since the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TreeTag {
    pub name: String,
    pub path: String,
    pub historize: bool,
    pub unit: Option<String>,
    pub value: Option<serde_json::Value>,
    pub timestamp: Option<String>,
}

/// Body of `POST /svc/tag/write`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TagWriteRequest {
    pub topic: String,
    pub value: serde_json::Value,
    pub qos: u8,
    pub retain: bool,
}

/// A tag record's fields for `POST /svc/tags`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewTag {
    pub path: String,
    pub historize: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
    /// What the historian keeps of the tag's values (absent or null: every value), e.g.
    /// `{"deviation": 0.1, "min_time": "1s", "max_time": "1h"}` or
    /// `{"deadband_percent": 1, "span": 100}`. Members: `deadband` or `deadband_percent`,
    /// `deviation` or `deviation_percent` (percent of `span`), `span`, `min_time`, `max_time`
    /// (default 8h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub compression: Option<serde_json::Value>,
}

/// Body of `PATCH /svc/historian` as a client sends it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistorianQuery {
    pub topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
}

/// Body of `PATCH /svc/historian/last`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistorianLastRequest {
    pub topic: String,
    pub limit: u64,
}

/// Body of `POST /svc/historian/export` as a client sends it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistorianExportRequest {
    #[schema(min_items = 1)]
    pub topics: Vec<String>,
    #[serde(rename = "startDate")]
    pub start_date: String,
    #[serde(rename = "endDate")]
    pub end_date: String,
    #[serde(
        rename = "sampleRate",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sample_rate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
    /// Adds a `<name> quality` column (good, uncertain or bad) after each topic's column.
    #[serde(default)]
    pub quality: bool,
}

/// One historian value (`PATCH /svc/historian`, `/last`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistorianPoint {
    pub timestamp: String,
    pub value: serde_json::Value,
    /// `uncertain` or `bad`; absent on a good point (and on buckets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// The OPC UA StatusCode, when the point carries one beyond its severity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u32>,
}

/// What a supervised link (an upstream's connection, a connector's) is doing (`state` of
/// `GET /svc/upstreams/status` and `GET /svc/connectors/status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Disabled,
    /// Connecting (an upstream: or connected and waiting for the SUBACK of the incoming
    /// bindings).
    Connecting,
    /// Connected: an upstream accepted the connection and every incoming binding's
    /// subscription; a connector's device answered and its points are read.
    Connected,
    /// Waiting to try again after a failure that may pass (network, timeout).
    Backoff,
    /// Waiting to try again after a refusal that needs a change (credentials, TLS, security,
    /// protocol, a refused subscription).
    Error,
    /// A connector another instance on the same store runs (the one that leads); this one
    /// takes over if it comes to lead.
    Standby,
}

impl LinkState {
    /// Every state, in the order `GET /metrics` lists them.
    pub const ALL: [LinkState; 6] = [
        LinkState::Connected,
        LinkState::Connecting,
        LinkState::Backoff,
        LinkState::Error,
        LinkState::Disabled,
        LinkState::Standby,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LinkState::Disabled => "disabled",
            LinkState::Connecting => "connecting",
            LinkState::Connected => "connected",
            LinkState::Backoff => "backoff",
            LinkState::Error => "error",
            LinkState::Standby => "standby",
        }
    }

    /// How many of `states` are in each state, every state listed.
    pub fn tally(states: impl IntoIterator<Item = LinkState>) -> Vec<(&'static str, usize)> {
        let mut counts: Vec<(&'static str, usize)> =
            LinkState::ALL.iter().map(|s| (s.name(), 0)).collect();
        for state in states {
            if let Some(i) = LinkState::ALL.iter().position(|s| *s == state) {
                counts[i].1 += 1;
            }
        }
        counts
    }
}

/// The part of an upstream's or connector's status the monitor shows (the server sends more:
/// times, error, traffic).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct LinkBrief {
    pub name: String,
    pub state: LinkState,
}
