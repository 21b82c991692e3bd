//! The server's services: state and rules shared by the routes, the broker's policy and
//! automation, with no HTTP in them (the tag registry, last values, namespaces, record writer,
//! login throttle, peers, credentials, system tables, automation, the upstreams' and the
//! connectors' ways into the broker).

pub(crate) mod alarms;
pub(crate) mod audit_retention;
pub(crate) mod automation;
pub(crate) mod backups;
pub(crate) mod checked_writes;
pub(crate) mod credentials;
pub(crate) mod device_links;
pub(crate) mod historize;
pub(crate) mod identity;
pub(crate) mod last_values;
pub(crate) mod link_status;
pub(crate) mod log_writer;
pub(crate) mod login_throttle;
pub(crate) mod mqtt_policy;
pub(crate) mod namespace_index;
pub(crate) mod notifications;
pub(crate) mod peers;
pub(crate) mod record_writer;
pub(crate) mod sparkplug;
pub(crate) mod system_tables;
pub(crate) mod tag_registration;
pub(crate) mod tag_registry;
pub(crate) mod uns;
pub(crate) mod upstream_links;
