//! `GET /svc/broker/clients`: the MQTT clients connected right now (who, from where, since
//! when, over what, how busy), for the console's System page.
//!
//! An administrator sees every client. Anyone else needs the `users` feature (read, scope `*`)
//! in the active domain — the right to see the domain's users, which a list of who is
//! connected from where is about — and sees only the clients of the domain's users (members
//! of one of its groups, as `GET /auth/user` counts them), each listed in that domain only:
//! one domain never learns another's clients, nor which other domains a user belongs to.

use crate::broker::{ConnectedClient, Transport};
use crate::ids::{RecordId, ADMIN_DOMAIN};
use crate::server::error::ApiResult;
use crate::server::http::caller::{Access, Caller};
use crate::server::routes::users::FEATURE as USERS;
use crate::server::AppState;
use crate::store::{Store, StoreResult};
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_clients))
}

/// One connected MQTT client, as `GET /svc/broker/clients` lists it.
#[derive(Debug, Serialize)]
pub struct BrokerClient {
    pub client_id: String,
    /// The user whose credential it connected with (`svc_admin.users:<key>`); absent for an
    /// anonymous client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// That user's name; absent for an anonymous client or a user deleted since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The API key it connected with (`svc_admin.api_keys:<key>`), if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Publishes and receives everywhere (an administrator, or an anonymous client where
    /// anonymous access is on).
    pub admin: bool,
    /// The domains the user belongs to (through its groups); for a non-administrator caller
    /// only the active domain.
    pub domains: Vec<String>,
    /// `3.1.1` or `5`.
    pub protocol: &'static str,
    pub transport: Transport,
    /// The listener: `mqtt`, `mqtts`, `ws`, `wss` or `http /mqtt`.
    pub listener: String,
    /// The client's address and port.
    pub address: String,
    /// When it connected (RFC 3339, UTC).
    pub connected_since: String,
    /// As granted; 0: no keep-alive.
    pub keep_alive_secs: u16,
    /// MQTT 5 Clean Start, MQTT 3.1.1 Clean Session.
    pub clean_start: bool,
    /// 0: the session ends with the connection.
    pub session_expiry_secs: u32,
    pub subscriptions: usize,
    /// Publishes accepted from it since it connected.
    pub messages_in: u64,
    /// Publishes sent to it since it connected.
    pub messages_out: u64,
}

/// What the store knows of a connected user.
struct Member {
    username: Option<String>,
    domains: BTreeSet<String>,
}

#[utoipa::path(get, path = "/svc/broker/clients", tag = "broker",
    responses((status = 200, description = "The connected MQTT clients", body = Vec<Object>),
        (status = 503, description = "The MQTT broker is not running")))]
async fn list_clients(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<BrokerClient>>> {
    // Only the administrator sees every domain; anyone else is checked before the broker is
    // even asked.
    let only = match caller.user.admin {
        true => None,
        false => {
            caller.require(&state, USERS, "*", Access::Read).await?;
            Some(caller.domain.clone())
        }
    };
    let clients = state.broker()?.clients();
    let users: BTreeSet<String> = clients
        .iter()
        .map(|c| c.principal.user_key.clone())
        .filter(|k| !k.is_empty())
        .collect();
    let members = state.store.read(move |s| members(s, users)).await?;
    let listed = clients
        .into_iter()
        .filter_map(|client| {
            let member = members.get(&client.principal.user_key);
            let domains: Vec<String> = match (&only, member) {
                (None, Some(m)) => m.domains.iter().cloned().collect(),
                (None, None) => Vec::new(),
                (Some(domain), Some(m)) if m.domains.contains(domain) => vec![domain.clone()],
                // Not one of the domain's users (or anonymous): not the caller's to see.
                (Some(_), _) => return None,
            };
            Some(listed(client, member, domains))
        })
        .collect();
    Ok(Json(listed))
}

/// The names and domains of `users` (user keys), in one pass over the store.
fn members(store: &Store, users: BTreeSet<String>) -> StoreResult<HashMap<String, Member>> {
    let mut found = HashMap::with_capacity(users.len());
    for key in users {
        let username = store.user_by_key(&key)?.map(|u| u.username);
        let domains = store
            .user_group_ids(&key, None)?
            .iter()
            .filter_map(|group| RecordId::parse(group).ok())
            .map(|group| group.table.domain)
            .collect();
        found.insert(key, Member { username, domains });
    }
    Ok(found)
}

fn listed(client: ConnectedClient, member: Option<&Member>, domains: Vec<String>) -> BrokerClient {
    let principal = client.principal;
    let user = (!principal.user_key.is_empty())
        .then(|| format!("{ADMIN_DOMAIN}.users:{}", principal.user_key));
    BrokerClient {
        client_id: client.client_id,
        user,
        username: member.and_then(|m| m.username.clone()),
        api_key: principal
            .api_key_id
            .map(|key| format!("{ADMIN_DOMAIN}.api_keys:{key}")),
        admin: principal.admin,
        domains,
        protocol: client.protocol,
        transport: client.transport,
        listener: client.listener,
        address: client.peer.to_string(),
        connected_since: crate::historian::format_ms(client.since_ms),
        keep_alive_secs: client.keep_alive_secs,
        clean_start: client.clean_start,
        session_expiry_secs: client.session_expiry_secs,
        subscriptions: client.subscriptions,
        messages_in: client.messages_in,
        messages_out: client.messages_out,
    }
}
