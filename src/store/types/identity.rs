//! Identity and the audit trail as the storage interface passes them: users, their grants,
//! and the ids and API shapes both engines build the same way.

use crate::ids::ADMIN_DOMAIN;
use crate::model::{ApiKeyInfo, Domain, Grant, Group, GroupFeature, NamedGrant, User, UserProfile};
use crate::time::now_rfc3339;

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
/// `domain` is the bare name of the domain it was made in, if any.
pub fn api_key_model(
    key: &str,
    name: String,
    prefix: String,
    created_dt: String,
    last_used_dt: Option<String>,
    domain: Option<String>,
) -> ApiKeyInfo {
    ApiKeyInfo {
        id: api_key_id(key),
        name,
        prefix,
        created_dt,
        last_used_dt,
        domain: domain.map(|d| format!("domains:{d}")),
        user_id: None,
    }
}

/// What an API key's secret stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyOwner {
    /// The key's bare key (its id without the table).
    pub key: String,
    pub user_key: String,
    /// The tenant domain the key was made in: what it publishes first, no other domain owning
    /// it, becomes that domain's tag. `None` for keys made in `svc_admin` and older keys.
    pub domain: Option<String>,
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

/// Actions beyond `read` and `read-write` that svc itself defines for one of its features, in
/// every domain, as if an administrator had configured them: the alarms' `ack` (acknowledge,
/// shelve, take out of service) for operators who may not change the alarms' definitions.
pub const BUILT_IN_ACTIONS: [(&str, &str); 1] = [("alarms", "ack")];

/// The built-in actions of `feature`.
pub fn built_in_actions(feature: &str) -> impl Iterator<Item = &'static str> + '_ {
    BUILT_IN_ACTIONS
        .iter()
        .filter(move |(f, _)| *f == feature)
        .map(|(_, action)| *action)
}

/// What an administrator holds in a domain: `read` and `read-write` on the platform's own
/// features and every feature with custom actions, plus those actions, at scope `*`. `custom`
/// is the domain's (feature, action) pairs.
pub fn admin_grants(custom: &[(String, String)]) -> Vec<NamedGrant> {
    // Every feature a route checks (the system tables' included), so that an
    // administrator's effective permissions say what the routes allow.
    const BUILT_IN: [&str; 15] = [
        "alarms",
        "api_keys",
        "audit",
        "collections",
        "connectors",
        "flows",
        "groups",
        "historian",
        "logs",
        "namespace",
        "processes",
        "sparkplug",
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
        for action in built_in_actions(feature) {
            if !custom.iter().any(|(f, a)| f == feature && a == action) {
                all.push(grant(feature, action));
            }
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
