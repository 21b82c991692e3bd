//! The web console: the files of `console/`, embedded in the binary at compile time and served
//! at `/console/` (compressed by what the browser accepts, with ETags), under a strict
//! Content-Security-Policy: scripts, styles and connections only from svc itself, no inline
//! script, no framing. `/` sends a browser there. The console holds no power of its own: it
//! calls the same REST API with the user's token and domain.

use super::AppState;
use axum::http::{header, HeaderValue};
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::Router;

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<AppState> {
    let files = memory_serve::load!()
        .index_file(Some("/index.html"))
        .enable_gzip(true)
        .enable_brotli(true)
        .into_router()
        .layer(axum::middleware::map_response(secure));
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .nest("/console/", files)
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
    response
}
