//! The web console: the files of `console/`, embedded in the binary at compile time with their
//! gzip and zstd encodings and served at `/console/` (the encoding the browser accepts, ETags
//! and 304s), under a strict Content-Security-Policy: scripts, styles and connections only from
//! svc itself, no inline script, no framing. `/` sends a browser there. The console holds no
//! power of its own: it calls the same REST API with the user's token and domain.

use crate::server::AppState;
use axum::http::{header, HeaderValue};
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::Router;

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static_serve::embed_assets!("console", compress = true);

pub fn routes() -> Router<AppState> {
    let files = Router::new()
        .nest("/console", static_router())
        .route(
            "/console/",
            static_serve::embed_asset!("console/index.html", compress = true),
        )
        .layer(axum::middleware::map_response(secure));
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .merge(files)
}

async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The files keep their names across releases: a browser asks again each time and gets a
    // 304 by ETag until an upgrade changes them.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
