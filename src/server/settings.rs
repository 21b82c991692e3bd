//! Settings of `svc serve`: every setting is a flag, an `SVC_<NAME>` environment variable and a
//! key of the optional TOML file given by `--config`. Precedence: flag, environment, file, default.

use crate::duration::parse_duration;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Deserialize;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Default, Clone, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (keys as the flag names, with `_`).
    #[arg(long, env = "SVC_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Directory holding svc.db, uploaded files and the JWT secret [default: ./svc-data]
    #[arg(long, env = "SVC_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where the data lives: postgres://user:password@host:port/db?sslmode=disable for a
    /// PostgreSQL database several instances may share [default: svc.db in the data dir]
    #[arg(long, env = "SVC_DATABASE")]
    pub database: Option<String>,
    /// REST port; also serves MQTT over WebSocket at /mqtt; 0 picks a free port [default: 6188]
    #[arg(long, env = "SVC_HTTP_PORT")]
    pub http_port: Option<u16>,
    /// MQTT over TCP port; 0 picks a free port [default: 1883]
    #[arg(long, env = "SVC_MQTT_PORT")]
    pub mqtt_port: Option<u16>,
    /// MQTT over WebSocket port; 0 picks a free port [default: 8083]
    #[arg(long, env = "SVC_WS_PORT")]
    pub ws_port: Option<u16>,
    /// Listen address of every listener [default: 127.0.0.1]
    #[arg(long, env = "SVC_BIND")]
    pub bind: Option<IpAddr>,
    /// Name reported by GET /svc/ [default: the host name]
    #[arg(long, env = "SVC_DEVICE_NAME")]
    pub device_name: Option<String>,
    /// Password of the `admin` user created on first start [default: generated and printed once]
    #[arg(long, env = "SVC_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// JWT lifetime, e.g. 12h, 30m [default: 12h]
    #[arg(long, env = "SVC_TOKEN_TTL")]
    pub token_ttl: Option<String>,
    /// Accept MQTT connections without credentials [default: false]
    #[arg(long, env = "SVC_MQTT_ALLOW_ANONYMOUS", num_args = 0..=1, default_missing_value = "true")]
    pub mqtt_allow_anonymous: Option<bool>,
    /// TLS certificate (PEM) for mqtts and wss
    #[arg(long, env = "SVC_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for mqtts and wss
    #[arg(long, env = "SVC_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Port of the MQTT-over-TLS listener when TLS is configured [default: 8883]
    #[arg(long, env = "SVC_MQTTS_PORT")]
    pub mqtts_port: Option<u16>,
    /// Port of the WebSocket-over-TLS listener when TLS is configured [default: 443]
    #[arg(long, env = "SVC_WSS_PORT")]
    pub wss_port: Option<u16>,
    /// Largest accepted request body in bytes [default: 10485760]
    #[arg(long, env = "SVC_MAX_BODY")]
    pub max_body: Option<usize>,
    /// Historian values older than this are deleted (e.g. 90d); a tag's own `retention` wins
    /// [default: keep forever]
    #[arg(long, env = "SVC_HISTORIAN_RETENTION")]
    pub historian_retention: Option<String>,
    /// A tag's recent values still kept as rows are closed into a compressed block once the
    /// tag has had no new value for this long (a full block closes at once) [default: 1h]
    #[arg(long, env = "SVC_HISTORIAN_SEAL_IDLE")]
    pub historian_seal_idle: Option<String>,
    /// HS256 secret for JWTs [default: generated into <data_dir>/jwt.secret]
    #[arg(long, env = "SVC_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// MQTT deliveries in flight per session, also the Receive Maximum announced to clients
    /// [default: 128]
    #[arg(long, env = "SVC_MQTT_MAX_INFLIGHT")]
    pub mqtt_max_inflight: Option<u16>,
    /// MQTT deliveries waiting per session (offline or behind a full window) [default: 100000]
    #[arg(long, env = "SVC_MQTT_MAX_QUEUE")]
    pub mqtt_max_queue: Option<usize>,
    /// Largest MQTT packet accepted and announced, in bytes [default: 1048576]
    #[arg(long, env = "SVC_MQTT_MAX_PACKET_SIZE")]
    pub mqtt_max_packet_size: Option<u32>,
    /// Longest MQTT keep alive in seconds; longer requests are lowered and the client told
    /// (Server Keep Alive) [default: 65535]
    #[arg(long, env = "SVC_MQTT_MAX_KEEPALIVE")]
    pub mqtt_max_keepalive: Option<u16>,
    /// How long a disconnected persistent MQTT session is kept (MQTT 3.1.1), and the most an
    /// MQTT 5 client may ask for, e.g. 2h [default: 2h]
    #[arg(long, env = "SVC_MQTT_SESSION_EXPIRY")]
    pub mqtt_session_expiry: Option<String>,
    /// Interpreter that runs Python processes [default: /usr/bin/python3, else
    /// /usr/local/bin/python3, else python3 on PATH]
    #[arg(long, env = "SVC_PYTHON")]
    pub python: Option<PathBuf>,
    /// Runs a process version's warm runtime (JavaScript context, Python worker) serves before
    /// it is built anew; 0 keeps none, so every run starts fresh [default: 10000]
    #[arg(long, env = "SVC_PROCESS_WARM_RUNS")]
    pub process_warm_runs: Option<u32>,
    /// Bytes the idle warm JavaScript contexts of all processes may hold together; past it the
    /// least recently used are dropped [default: 134217728]
    #[arg(long, env = "SVC_PROCESS_WARM_MEMORY")]
    pub process_warm_memory: Option<usize>,
    /// Requests kept in memory for GET /svc/logs, newest replacing oldest [default: 10000]
    #[arg(long, env = "SVC_REQUEST_LOG_SIZE")]
    pub request_log_size: Option<usize>,
    /// Bytes of records kept in memory for reads by id; 0 keeps none [default: 67108864]
    #[arg(long, env = "SVC_RECORD_CACHE_SIZE")]
    pub record_cache_size: Option<usize>,
    /// Audit entries older than this are deleted, e.g. 365d [default: 365d]
    #[arg(long, env = "SVC_AUDIT_RETENTION")]
    pub audit_retention: Option<String>,
    /// Cron pattern (UTC; 5 fields, or 6 with seconds first) of automatic snapshots of the
    /// store into <data_dir>/backups [default: none]
    #[arg(long, env = "SVC_BACKUP_SCHEDULE")]
    pub backup_schedule: Option<String>,
    /// Scheduled snapshots kept; older ones are deleted [default: 7]
    #[arg(long, env = "SVC_BACKUP_KEEP")]
    pub backup_keep: Option<usize>,
    /// Serve GET /metrics without a credential (else an administrator's) [default: false]
    #[arg(long, env = "SVC_METRICS_PUBLIC", num_args = 0..=1, default_missing_value = "true")]
    pub metrics_public: Option<bool>,
    /// Failed password logins per user name within login_window before the name is locked for
    /// login_window (HTTP 429, MQTT refusals); 0: no limit [default: 5]
    #[arg(long, env = "SVC_LOGIN_MAX_FAILURES")]
    pub login_max_failures: Option<u32>,
    /// Failed password logins per client address within login_window before the address is
    /// locked for login_window; 0: no limit [default: 20]
    #[arg(long, env = "SVC_LOGIN_MAX_ADDRESS_FAILURES")]
    pub login_max_address_failures: Option<u32>,
    /// The window failed logins are counted in, and how long a lock lasts, e.g. 5m [default: 5m]
    #[arg(long, env = "SVC_LOGIN_WINDOW")]
    pub login_window: Option<String>,
    /// An alarm raised this many times within alarm_chatter_window is reported as chattering
    /// [default: 3]
    #[arg(long, env = "SVC_ALARM_CHATTER_COUNT")]
    pub alarm_chatter_count: Option<usize>,
    /// The window chattering is counted in, e.g. 1m [default: 1m]
    #[arg(long, env = "SVC_ALARM_CHATTER_WINDOW")]
    pub alarm_chatter_window: Option<String>,
    /// An alarm active for longer than this is reported as stale, e.g. 24h [default: 24h]
    #[arg(long, env = "SVC_ALARM_STALE_AFTER")]
    pub alarm_stale_after: Option<String>,
}

/// Resolved settings, every default applied.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The store's engine and place (`--database`).
    pub database: crate::store::Location,
    pub data_dir: PathBuf,
    pub http_port: u16,
    pub mqtt_port: u16,
    pub ws_port: u16,
    pub bind: IpAddr,
    pub device_name: String,
    pub admin_password: Option<String>,
    pub token_ttl: Duration,
    pub mqtt_allow_anonymous: bool,
    pub tls: Option<TlsFiles>,
    pub mqtts_port: u16,
    pub wss_port: u16,
    pub max_body: usize,
    pub jwt_secret: Option<String>,
    pub historian_retention: Option<Duration>,
    /// How long a tag's hot rows wait without a new value before they close into a block.
    pub historian_seal_idle: Duration,
    pub mqtt_limits: crate::broker::Limits,
    /// The configured Python interpreter (`None`: look for one).
    pub python: Option<PathBuf>,
    /// What processes' warm runtimes may take.
    pub process_warm: crate::functions::engine::warm::Settings,
    pub request_log_size: usize,
    pub record_cache_size: usize,
    pub audit_retention: Duration,
    pub backup_schedule: Option<crate::schedule::Schedule>,
    pub backup_keep: usize,
    /// GET /metrics needs no credential.
    pub metrics_public: bool,
    pub login_limits: crate::server::services::login_throttle::Limits,
    /// What alarm health is measured against.
    pub alarm_health: crate::alarms::health::HealthRules,
}

#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Settings {
    pub fn resolve(args: ServeArgs) -> Result<Settings> {
        let file = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config file {}", path.display()))?;
                toml::from_str::<ServeArgs>(&text)
                    .with_context(|| format!("invalid config file {}", path.display()))?
            }
            None => ServeArgs::default(),
        };
        let pick = |flag: Option<String>, file: Option<String>| flag.or(file);
        let token_ttl_text = pick(args.token_ttl, file.token_ttl).unwrap_or_else(|| "12h".into());
        let token_ttl = parse_duration(&token_ttl_text)
            .map_err(|e| anyhow::anyhow!("invalid token_ttl: {e}"))?;
        if token_ttl.is_zero() {
            bail!("invalid token_ttl: it must be longer than zero");
        }
        let tls = match (
            args.tls_cert.or(file.tls_cert),
            args.tls_key.or(file.tls_key),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => bail!("tls_cert and tls_key must be given together"),
        };
        let historian_retention = match pick(args.historian_retention, file.historian_retention) {
            Some(text) => Some(
                parse_duration(&text)
                    .map_err(|e| anyhow::anyhow!("invalid historian_retention: {e}"))?,
            ),
            None => None,
        };
        let seal_idle_text =
            pick(args.historian_seal_idle, file.historian_seal_idle).unwrap_or_else(|| "1h".into());
        let historian_seal_idle = parse_duration(&seal_idle_text)
            .map_err(|e| anyhow::anyhow!("invalid historian_seal_idle: {e}"))?;
        let max_body = args.max_body.or(file.max_body).unwrap_or(10 * 1024 * 1024);
        if max_body == 0 {
            bail!("invalid max_body: it must be at least 1 byte");
        }
        let audit_retention_text =
            pick(args.audit_retention, file.audit_retention).unwrap_or_else(|| "365d".into());
        let audit_retention = parse_duration(&audit_retention_text)
            .map_err(|e| anyhow::anyhow!("invalid audit_retention: {e}"))?;
        if audit_retention.is_zero() {
            bail!("invalid audit_retention: it must be longer than zero");
        }
        let backup_schedule = match pick(args.backup_schedule, file.backup_schedule) {
            Some(text) => Some(
                crate::schedule::Schedule::cron(&text)
                    .map_err(|e| anyhow::anyhow!("invalid backup_schedule: {e}"))?,
            ),
            None => None,
        };
        let backup_keep = args.backup_keep.or(file.backup_keep).unwrap_or(7);
        let alarm_health = alarm_health(
            args.alarm_chatter_count.or(file.alarm_chatter_count),
            pick(args.alarm_chatter_window, file.alarm_chatter_window),
            pick(args.alarm_stale_after, file.alarm_stale_after),
        )?;
        if backup_keep == 0 {
            bail!("invalid backup_keep: keep at least 1 snapshot");
        }
        let defaults = crate::broker::Limits::default();
        let mqtt_session_expiry = match pick(args.mqtt_session_expiry, file.mqtt_session_expiry) {
            Some(text) => parse_duration(&text)
                .map_err(|e| anyhow::anyhow!("invalid mqtt_session_expiry: {e}"))?
                .as_secs()
                .min(u64::from(u32::MAX - 1)) as u32,
            None => defaults.session_expiry_secs,
        };
        let mqtt_limits = crate::broker::Limits {
            max_inflight: args
                .mqtt_max_inflight
                .or(file.mqtt_max_inflight)
                .unwrap_or(defaults.max_inflight),
            max_queue: args
                .mqtt_max_queue
                .or(file.mqtt_max_queue)
                .unwrap_or(defaults.max_queue),
            max_packet_size: args
                .mqtt_max_packet_size
                .or(file.mqtt_max_packet_size)
                .unwrap_or(defaults.max_packet_size),
            max_keepalive: args
                .mqtt_max_keepalive
                .or(file.mqtt_max_keepalive)
                .unwrap_or(defaults.max_keepalive),
            session_expiry_secs: mqtt_session_expiry,
            topic_alias_max: defaults.topic_alias_max,
        };
        if mqtt_limits.max_inflight == 0 || mqtt_limits.max_queue == 0 {
            bail!("invalid mqtt_max_inflight or mqtt_max_queue: each must be at least 1");
        }
        if mqtt_limits.max_packet_size < 64 {
            bail!("invalid mqtt_max_packet_size: it must be at least 64 bytes");
        }
        let login_defaults = crate::server::services::login_throttle::Limits::default();
        let login_window = match pick(args.login_window, file.login_window) {
            Some(text) => {
                parse_duration(&text).map_err(|e| anyhow::anyhow!("invalid login_window: {e}"))?
            }
            None => login_defaults.window,
        };
        if login_window.is_zero() {
            bail!("invalid login_window: it must be longer than zero");
        }
        let login_limits = crate::server::services::login_throttle::Limits {
            per_user: args
                .login_max_failures
                .or(file.login_max_failures)
                .unwrap_or(login_defaults.per_user),
            per_address: args
                .login_max_address_failures
                .or(file.login_max_address_failures)
                .unwrap_or(login_defaults.per_address),
            window: login_window,
        };
        let data_dir = args
            .data_dir
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("./svc-data"));
        let database =
            crate::store::Location::parse(args.database.or(file.database).as_deref(), &data_dir)
                .map_err(|e| anyhow::anyhow!("invalid database: {e}"))?;
        Ok(Settings {
            database,
            metrics_public: args.metrics_public.or(file.metrics_public).unwrap_or(false),
            login_limits,
            mqtt_limits,
            data_dir,
            http_port: args.http_port.or(file.http_port).unwrap_or(6188),
            mqtt_port: args.mqtt_port.or(file.mqtt_port).unwrap_or(1883),
            ws_port: args.ws_port.or(file.ws_port).unwrap_or(8083),
            bind: args
                .bind
                .or(file.bind)
                .unwrap_or(IpAddr::from([127, 0, 0, 1])),
            device_name: pick(args.device_name, file.device_name)
                .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned()),
            admin_password: pick(args.admin_password, file.admin_password),
            token_ttl,
            mqtt_allow_anonymous: args
                .mqtt_allow_anonymous
                .or(file.mqtt_allow_anonymous)
                .unwrap_or(false),
            tls,
            mqtts_port: args.mqtts_port.or(file.mqtts_port).unwrap_or(8883),
            wss_port: args.wss_port.or(file.wss_port).unwrap_or(443),
            max_body,
            jwt_secret: pick(args.jwt_secret, file.jwt_secret),
            historian_retention,
            historian_seal_idle,
            python: args.python.or(file.python),
            process_warm: crate::functions::engine::warm::Settings {
                max_runs: args
                    .process_warm_runs
                    .or(file.process_warm_runs)
                    .unwrap_or(crate::functions::engine::warm::Settings::default().max_runs),
                memory_bytes: args
                    .process_warm_memory
                    .or(file.process_warm_memory)
                    .unwrap_or(crate::functions::engine::warm::Settings::default().memory_bytes),
            },
            request_log_size: args
                .request_log_size
                .or(file.request_log_size)
                .unwrap_or(10_000),
            record_cache_size: args
                .record_cache_size
                .or(file.record_cache_size)
                .unwrap_or(crate::store::DEFAULT_RECORD_CACHE_BYTES),
            audit_retention,
            backup_schedule,
            backup_keep,
            alarm_health,
        })
    }

    pub fn alarm_health_rules(&self) -> crate::alarms::health::HealthRules {
        self.alarm_health.clone()
    }
}

fn alarm_health(
    chatter_count: Option<usize>,
    chatter_window: Option<String>,
    stale_after: Option<String>,
) -> Result<crate::alarms::health::HealthRules> {
    let mut rules = crate::alarms::health::HealthRules::default();
    if let Some(count) = chatter_count {
        if count < 2 {
            bail!("invalid alarm_chatter_count: an alarm chatters when raised at least 2 times");
        }
        rules.chatter_count = count;
    }
    let millis = |name: &str, text: String| -> Result<i64> {
        let d = parse_duration(&text).map_err(|e| anyhow::anyhow!("invalid {name}: {e}"))?;
        if d.is_zero() {
            bail!("invalid {name}: it must be longer than zero");
        }
        Ok(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    };
    if let Some(text) = chatter_window {
        rules.chatter_window_ms = millis("alarm_chatter_window", text)?;
    }
    if let Some(text) = stale_after {
        rules.stale_after_ms = millis("alarm_stale_after", text)?;
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_arguments() {
        let s = Settings::resolve(ServeArgs::default()).unwrap();
        assert_eq!(s.http_port, 6188);
        assert_eq!(s.mqtt_port, 1883);
        assert_eq!(s.ws_port, 8083);
        assert_eq!(s.token_ttl, Duration::from_secs(12 * 3600));
        assert_eq!(s.data_dir, PathBuf::from("./svc-data"));
        assert!(!s.mqtt_allow_anonymous);
        assert!(s.tls.is_none());
    }

    #[test]
    fn flag_beats_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc.toml");
        std::fs::write(
            &path,
            "http_port = 7000\nmqtt_port = 7001\ntoken_ttl = \"30m\"\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(path),
            http_port: Some(8000),
            ..ServeArgs::default()
        };
        let s = Settings::resolve(args).unwrap();
        assert_eq!(s.http_port, 8000);
        assert_eq!(s.mqtt_port, 7001);
        assert_eq!(s.token_ttl, Duration::from_secs(1800));
    }

    #[test]
    fn rejects_bad_values() {
        let bad_ttl = ServeArgs {
            token_ttl: Some("soon".into()),
            ..ServeArgs::default()
        };
        assert!(Settings::resolve(bad_ttl).is_err());
        let half_tls = ServeArgs {
            tls_cert: Some("c.pem".into()),
            ..ServeArgs::default()
        };
        assert!(Settings::resolve(half_tls).is_err());
    }

    #[test]
    fn unknown_file_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("svc.toml");
        std::fs::write(&path, "http_prot = 7000\n").unwrap();
        let args = ServeArgs {
            config: Some(path),
            ..ServeArgs::default()
        };
        let err = Settings::resolve(args).unwrap_err();
        assert!(format!("{err:#}").contains("http_prot"));
    }
}
