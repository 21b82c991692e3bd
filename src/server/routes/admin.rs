//! Domain administration (under `/auth` and `/svc/auth`, administrators only). Users are in
//! [`crate::server::routes::users`], groups and grants in [`crate::server::routes::groups`].

use crate::ids::is_domain_name;
use crate::model::{Domain, NewDomainRequest};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::Identity;
use crate::server::http::json::JsonBody;
use crate::server::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_domains, create_domain))
}

#[utoipa::path(get, path = "/domains", tag = "admin",
    responses((status = 200, description = "The domains", body = Vec<Domain>)))]
async fn list_domains(
    State(state): State<AppState>,
    who: Identity,
) -> ApiResult<Json<Vec<Domain>>> {
    who.require_admin()?;
    Ok(Json(state.store.run(|s| s.list_domains()).await?))
}

#[utoipa::path(post, path = "/domains", tag = "admin", request_body = NewDomainRequest,
    responses((status = 201, description = "The new domain", body = Domain),
        (status = 409, description = "The domain exists already")))]
async fn create_domain(
    State(state): State<AppState>,
    who: Identity,
    JsonBody(request): JsonBody<NewDomainRequest>,
) -> ApiResult<(StatusCode, Json<Domain>)> {
    who.require_admin()?;
    let name = request.name;
    if !is_domain_name(&name) {
        return Err(ApiError::bad_request(format!(
            "invalid domain name `{name}`: it must match [a-z][a-z0-9_]{{0,62}}"
        )));
    }
    let domain = state.store.run(move |s| s.create_domain(&name)).await?;
    state.identities.clear();
    Ok((StatusCode::CREATED, Json(domain)))
}
