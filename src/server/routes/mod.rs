//! The REST routes, one file per resource: each file builds its `OpenApiRouter` and holds
//! thin handlers that check the caller, call the services and the store, and shape the answer.

pub(crate) mod admin;
pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod backup;
pub(crate) mod broker_clients;
pub(crate) mod code;
pub(crate) mod console;
pub(crate) mod files;
pub(crate) mod flows;
pub(crate) mod groups;
pub(crate) mod historian;
pub(crate) mod info;
pub(crate) mod metrics;
pub(crate) mod namespaces;
pub(crate) mod openapi;
pub(crate) mod processes;
pub(crate) mod records;
pub(crate) mod reports;
pub(crate) mod tag_stream;
pub(crate) mod tags;
pub(crate) mod upstreams;
pub(crate) mod users;
