//! User administration (`/auth/user…`, also under `/svc/auth`). An administrator manages every
//! user; anyone holding the `users` feature at the domain scope (`*`) of the active domain
//! manages that domain's users: those in one of its groups. Such a manager sees only the
//! domain's group memberships, creates users only into the domain's groups, never creates an
//! administrator, and deletes only users who belong to no other domain.

use crate::ids::{RecordId, ADMIN_DOMAIN};
use crate::model::{NewUserRequest, Success, User, UserProfile};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::credentials::hash_password;
use crate::server::AppState;
use crate::store::{AuthUser, Store, StoreResult};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

pub const FEATURE: &str = "users";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(get_user, delete_user))
}

/// Whose users a caller manages: everyone's (an administrator) or one domain's.
enum Reach {
    All,
    Domain(String),
}

async fn reach(state: &AppState, caller: &Caller, access: Access) -> ApiResult<Reach> {
    if caller.user.admin {
        return Ok(Reach::All);
    }
    caller.require(state, FEATURE, "*", access).await?;
    Ok(Reach::Domain(caller.domain.clone()))
}

impl Reach {
    fn domain(&self) -> Option<&str> {
        match self {
            Reach::All => None,
            Reach::Domain(d) => Some(d),
        }
    }
}

/// The API's view of a user, with the memberships the reach shows.
fn user_model(store: &Store, user: &AuthUser, reach: &Reach) -> StoreResult<User> {
    Ok(user.to_model(
        store.user_profile(&user.key)?,
        store.user_group_ids(&user.key, reach.domain())?,
    ))
}

/// Whether the user is one the reach manages.
fn reaches(store: &Store, user_key: &str, reach: &Reach) -> StoreResult<bool> {
    match reach.domain() {
        None => Ok(true),
        Some(domain) => Ok(!store.user_group_ids(user_key, Some(domain))?.is_empty()),
    }
}

#[utoipa::path(get, path = "/user", tag = "users",
    responses((status = 200, description = "The users the caller may see", body = Vec<User>)))]
async fn list_users(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<User>>> {
    let reach = reach(&state, &caller, Access::Read).await?;
    let users = state
        .store
        .run(move |s| {
            let mut out = Vec::new();
            for user in s.list_users()? {
                if reaches(s, &user.key, &reach)? {
                    out.push(user_model(s, &user, &reach)?);
                }
            }
            Ok(out)
        })
        .await?;
    Ok(Json(users))
}

/// A user key from a full RecordID (`svc_admin.users:<key>`) or a bare key.
pub fn user_key(id: &str) -> ApiResult<String> {
    key_in(id, ADMIN_DOMAIN, "users")
}

/// The key of `id` when it is a RecordID of `domain.table`, or a bare key.
pub fn key_in(id: &str, domain: &str, table: &str) -> ApiResult<String> {
    if !id.contains(':') {
        return match crate::ids::is_record_key(id) {
            true => Ok(id.to_string()),
            false => Err(ApiError::bad_request(format!("invalid id `{id}`"))),
        };
    }
    let parsed = RecordId::parse(id).map_err(ApiError::bad_request)?;
    if parsed.table.domain != domain || parsed.table.table != table {
        return Err(ApiError::not_found(format!(
            "no {table} record `{id}` in domain `{domain}`"
        )));
    }
    Ok(parsed.key)
}

fn check_profile(profile: &UserProfile) -> ApiResult<()> {
    if let Some(email) = &profile.email {
        if !is_email(email) {
            return Err(ApiError::bad_request(format!(
                "`email` `{email}` is not an email address"
            )));
        }
    }
    let fields = [
        ("firstName", &profile.first_name),
        ("lastName", &profile.last_name),
        ("number", &profile.number),
        ("userImage", &profile.user_image),
    ];
    for (name, value) in fields {
        if value
            .as_ref()
            .is_some_and(|v| v.len() > 2048 || v.chars().any(char::is_control))
        {
            return Err(ApiError::bad_request(format!(
                "`{name}` must be at most 2048 printable characters"
            )));
        }
    }
    Ok(())
}

/// `local@domain.tld` without spaces: the shape of an address, not its deliverability.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    text.len() <= 254
        && !local.is_empty()
        && !domain.contains('@')
        && domain.split('.').count() >= 2
        && domain.split('.').all(|label| !label.is_empty())
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The (domain, group key) of each `group_ids` entry; a domain manager may name only groups of
/// its domain, and must name at least one.
fn groups_to_join(ids: &[String], reach: &Reach) -> ApiResult<Vec<(String, String)>> {
    let mut groups = Vec::new();
    for id in ids {
        let parsed =
            RecordId::parse(id).map_err(|e| ApiError::bad_request(format!("`group_ids`: {e}")))?;
        if parsed.table.table != "groups" {
            return Err(ApiError::bad_request(format!(
                "`group_ids`: `{id}` is not a group id"
            )));
        }
        if let Some(domain) = reach.domain() {
            if parsed.table.domain != domain {
                return Err(ApiError::unauthorized(format!(
                    "not allowed to add users to groups outside domain `{domain}`"
                )));
            }
        }
        groups.push((parsed.table.domain, parsed.key));
    }
    if groups.is_empty() && reach.domain().is_some() {
        return Err(ApiError::bad_request(
            "`group_ids` must name at least one group of the domain",
        ));
    }
    Ok(groups)
}

#[utoipa::path(post, path = "/user", tag = "users", request_body = NewUserRequest,
    responses((status = 201, description = "The new user", body = User),
        (status = 409, description = "The user name is taken")))]
async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<NewUserRequest>,
) -> ApiResult<(StatusCode, Json<User>)> {
    let reach = reach(&state, &caller, Access::Write).await?;
    if request.admin && reach.domain().is_some() {
        return Err(ApiError::unauthorized(
            "only an administrator can create administrators",
        ));
    }
    let username = request.username.trim().to_string();
    if username.is_empty() || username.len() > 128 || username.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "`username` must be 1 to 128 printable characters",
        ));
    }
    if request.password.len() < 8 {
        return Err(ApiError::bad_request(
            "`password` must be at least 8 characters",
        ));
    }
    check_profile(&request.profile)?;
    let groups = groups_to_join(&request.group_ids, &reach)?;
    let password = request.password;
    let hash = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|_| ApiError::internal("cannot hash the password"))?
        .map_err(|_| ApiError::internal("cannot hash the password"))?;
    let (admin, profile) = (request.admin, request.profile);
    let user = state
        .store
        .run(move |s| {
            for (domain, key) in &groups {
                if !s.group_exists(domain, key)? {
                    return Err(crate::store::StoreError::Invalid(format!(
                        "`group_ids`: no group `{domain}.groups:{key}`"
                    )));
                }
            }
            let user = s.create_user(&username, &hash, admin)?;
            s.set_user_profile(&user.key, &profile)?;
            for (domain, key) in &groups {
                s.add_group_member(domain, key, &user.key)?;
            }
            user_model(s, &user, &reach)
        })
        .await?;
    state.identities.clear();
    Ok((StatusCode::CREATED, Json(user)))
}

#[utoipa::path(get, path = "/user/{id}", tag = "users",
    responses((status = 200, description = "The user", body = User)))]
async fn get_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<User>> {
    let reach = reach(&state, &caller, Access::Read).await?;
    let key = user_key(&id)?;
    let user = state
        .store
        .run(move |s| match s.user_by_key(&key)? {
            Some(user) if reaches(s, &key, &reach)? => Ok(Some(user_model(s, &user, &reach)?)),
            _ => Ok(None),
        })
        .await?;
    user.map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no user `{id}`")))
}

#[utoipa::path(delete, path = "/user/{id}", tag = "users",
    responses((status = 200, description = "The user is deleted", body = Success)))]
async fn delete_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Success>> {
    let reach = reach(&state, &caller, Access::Write).await?;
    let key = user_key(&id)?;
    if key == caller.user.key {
        return Err(ApiError::bad_request("you cannot delete yourself"));
    }
    if let Reach::Domain(domain) = &reach {
        let (k, d) = (key.clone(), domain.clone());
        let (target, everywhere) = state
            .store
            .run(move |s| Ok((s.user_by_key(&k)?, s.user_group_ids(&k, None)?)))
            .await?;
        let prefix = format!("{d}.groups:");
        match target {
            Some(user) if everywhere.iter().any(|g| g.starts_with(&prefix)) => {
                if user.admin || everywhere.iter().any(|g| !g.starts_with(&prefix)) {
                    return Err(ApiError::unauthorized(
                        "not allowed to delete an administrator or a user of other domains",
                    ));
                }
            }
            _ => return Err(ApiError::not_found(format!("no user `{id}`"))),
        }
    }
    let user = key.clone();
    let removed = state.store.run(move |s| s.delete_user(&key)).await?;
    state.identities.clear();
    if !removed {
        return Err(ApiError::not_found(format!("no user `{id}`")));
    }
    if let Ok(broker) = state.broker() {
        broker.disconnect_where(|p| p.user_key == user).await;
    }
    Ok(Json(Success::yes()))
}

#[cfg(test)]
mod tests {
    use super::is_email;

    #[test]
    fn email_shapes() {
        for good in ["a@b.co", "first.last+tag@plant.example.com"] {
            assert!(is_email(good), "{good}");
        }
        for bad in [
            "", "a", "a@b", "@b.co", "a@@b.co", "a b@c.de", "a@b..co", "a@.co",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
