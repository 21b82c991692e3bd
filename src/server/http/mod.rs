//! HTTP plumbing under every route: the listener, correlation ids and the request log, body
//! limits and JSON bodies, errors as responses, the caller extractor, and request metrics.

pub(crate) mod audit_trail;
pub(crate) mod caller;
pub(crate) mod drain;
pub(crate) mod errors;
pub(crate) mod export_stream;
pub(crate) mod json;
pub(crate) mod listener;
pub(crate) mod metrics;
pub(crate) mod middleware;
pub(crate) mod observe;
pub(crate) mod request_log;
