//! Command-line shape of the `svc` binary: the subcommands, their arguments and the global
//! client options. The client subcommands run through [`run::run`].

mod alarms;
mod auth;
mod backup;
mod connectors;
mod csv_typed;
pub mod dist_files;
mod export;
mod filters;
mod flows;
mod functions;
mod historian;
mod import;
mod keys;
mod migrate;
mod namespaces;
mod output;
mod parse;
mod records;
mod run;
mod sparkplug;
mod tags;
mod upstreams;

use crate::server::settings::ServeArgs;
use clap::{Args, Parser, Subcommand, ValueEnum};

// The API client (shared with the TUI) under the names the subcommands use.
use crate::client;
pub use crate::client::{error, profile, GlobalArgs, OutputFormat, DEFAULT_URL};

pub use alarms::AlarmsCommand;
pub use parse::parse;
pub use run::run;

/// `svc --version`: the crate's version, the commit it was built from and the build date
/// (stamped by build.rs), e.g. `0.1.0 (commit 0707afa, built 2026-12-07)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SVC_BUILD_COMMIT"),
    ", built ",
    env!("SVC_BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "svc",
    version = VERSION,
    about = "Industrial data platform: REST API, MQTT broker and historian in one binary"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// `TOPIC=NAME` of `historian export --map`: both sides non-empty, split at the last `=`
/// (topics may hold `=`, column names rarely do).
fn topic_mapping(text: &str) -> Result<(String, String), String> {
    match text.rsplit_once('=') {
        Some((topic, name)) if !topic.is_empty() && !name.is_empty() => {
            Ok((topic.to_string(), name.to_string()))
        }
        _ => Err(format!("`{text}` is not TOPIC=NAME")),
    }
}

/// A JSON object given on the command line (the server checks its members).
fn json_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("`{text}` is not a JSON object")),
        Err(e) => Err(format!("`{text}` is not JSON: {e}")),
    }
}

/// Names, ids and topics given on the command line may not be empty.
fn non_empty() -> clap::builder::NonEmptyStringValueParser {
    clap::builder::NonEmptyStringValueParser::new()
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the REST API (and, with it, everything the platform serves) over the data directory.
    Serve(Box<ServeArgs>),
    /// Log in with a username and password; the token is stored in the profile.
    Login(LoginArgs),
    /// Forget the profile's stored login.
    Logout,
    /// Create, list and revoke API keys of the logged-in user.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// List, get, create, update, delete, count, import and export records.
    #[command(subcommand)]
    Records(RecordsCommand),
    /// Query the historian: historized tags, windows, aggregates, last values, CSV export.
    #[command(subcommand)]
    Historian(HistorianCommand),
    /// List and create tags, publish values, watch live values over MQTT.
    #[command(subcommand)]
    Tags(TagsCommand),
    /// List, create and delete the domain's namespaces (UNS branches); draw their tag tree.
    #[command(subcommand)]
    Namespaces(NamespacesCommand),
    /// List, create, update, delete and test the domain's upstream brokers.
    #[command(subcommand)]
    Upstreams(UpstreamsCommand),
    /// List, create, update, delete, test and browse the domain's device connectors (OPC UA,
    /// Modbus TCP); their status; the OPC UA server certificates to trust.
    #[command(subcommand)]
    Connectors(ConnectorsCommand),
    /// List, create, update and delete the domain's Sparkplug B hosts; list the edge nodes
    /// they know.
    #[command(subcommand)]
    Sparkplug(SparkplugCommand),
    /// Alarms: list, create, update and delete definitions; the standing alarms, the journal
    /// and health; acknowledge, shelve, unshelve, out of service, in service; watch changes.
    #[command(subcommand)]
    Alarms(AlarmsCommand),
    /// Deploy, run and inspect functions (JavaScript run by the server on triggers).
    #[command(subcommand)]
    Functions(FunctionsCommand),
    /// Import, start, stop, run and inspect flows (graphs of nodes run by the server).
    #[command(subcommand)]
    Flows(FlowsCommand),
    /// Print the device info of the server (`GET /svc/`).
    Info,
    /// Save a consistent snapshot of a running server's store to FILE (administrators; the
    /// server keeps serving).
    Backup { file: std::path::PathBuf },
    /// Put a snapshot in place as the database of a stopped data dir; the old database is kept
    /// as svc.db.before-restore.
    Restore {
        file: std::path::PathBuf,
        /// The data dir of the stopped server
        #[arg(long, env = "SVC_DATA_DIR", default_value = "./svc-data")]
        data_dir: std::path::PathBuf,
    },
    /// Copy an SQLite store (a stopped server's data dir) into a PostgreSQL database: users,
    /// keys, domains, records, collections, tags, functions, historian and broker state.
    /// Resumable (run it again after an interruption); ends with per-table counts.
    Migrate(MigrateArgs),
    /// Full-screen live monitor of the tag tree (UNS) over MQTT, with historian trends.
    Tui(crate::tui::TuiArgs),
    /// Print a shell completion script.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The data dir of the SQLite store: `sqlite://<dir>` or a path (the folder holding svc.db)
    #[arg(long, value_name = "SQLITE_DATA_DIR")]
    pub from: String,
    /// The PostgreSQL database: `postgres://user:password@host:port/db?sslmode=disable`
    #[arg(long, value_name = "POSTGRES_URL")]
    pub to: String,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// User name [default: prompt]
    #[arg(long, short)]
    pub username: Option<String>,
    /// Read the password from standard input instead of prompting
    #[arg(long)]
    pub password_stdin: bool,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key; the key is printed once and cannot be shown again. It is made in the
    /// `--domain` given: topics it publishes first, if nothing owns them, become tags there.
    Create {
        #[arg(value_parser = non_empty())]
        name: String,
    },
    /// List your API keys (never the secrets).
    List,
    /// Revoke one of your API keys by id.
    Revoke {
        #[arg(value_parser = non_empty())]
        id: String,
    },
}

/// Filtering, sorting and paging of a record list.
#[derive(Debug, Clone, Default, Args)]
pub struct ListArgs {
    /// Condition `'field op value'` (ANDed; repeatable). Ops: = == != > >= < <= eq ne gt gte lt
    /// lte contains in nin "not in". Type the field as `field:number` (string number boolean
    /// date null object) or quote the value ('name = "007"') to force a string.
    #[arg(long = "filter", short = 'f', value_name = "EXPR")]
    pub filters: Vec<String>,
    /// Condition of the OR group (repeatable; the group is ANDed with --filter)
    #[arg(long = "or-filter", value_name = "EXPR")]
    pub or_filters: Vec<String>,
    /// Sort key `field[:asc|desc]` (repeatable for tie-breaks)
    #[arg(
        long = "sort",
        short = 's',
        value_name = "FIELD[:DIR]",
        allow_hyphen_values = true
    )]
    pub sort: Vec<String>,
    /// Fields to return, comma separated (id is always kept)
    #[arg(long)]
    pub fields: Option<String>,
    /// Record-id fields to replace with the referenced records, comma separated
    #[arg(long)]
    pub expand: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum RecordsCommand {
    /// List records of a table.
    List {
        #[arg(value_parser = non_empty())]
        table: String,
        #[command(flatten)]
        list: ListArgs,
        /// At most this many records (server default 1000, max 10000)
        #[arg(long, short = 'l')]
        limit: Option<u64>,
        /// Skip this many records
        #[arg(long)]
        offset: Option<u64>,
    },
    /// Get one record by its id (`<domain>.<table>:<key>`).
    Get {
        #[arg(value_parser = non_empty())]
        id: String,
    },
    /// Create a record from JSON.
    Create {
        #[arg(value_parser = non_empty())]
        table: String,
        /// The record: inline JSON, `@file`, or `-` for standard input
        #[arg(long, short = 'd')]
        data: String,
    },
    /// Update fields of a record (the given fields replace the stored ones).
    Update {
        #[arg(value_parser = non_empty())]
        id: String,
        /// The fields: inline JSON, `@file`, or `-` for standard input
        #[arg(long, short = 'd')]
        data: String,
    },
    /// Delete a record.
    Delete {
        #[arg(value_parser = non_empty())]
        id: String,
    },
    /// Count the records matching the filters.
    Count {
        #[arg(value_parser = non_empty())]
        table: String,
        #[arg(long = "filter", short = 'f', value_name = "EXPR")]
        filters: Vec<String>,
        #[arg(long = "or-filter", value_name = "EXPR")]
        or_filters: Vec<String>,
    },
    /// Import records from a JSON array, JSONL or CSV file (`-`: standard input).
    Import(ImportArgs),
    /// Export every record of a table (all pages) to standard output.
    Export {
        #[arg(value_parser = non_empty())]
        table: String,
        #[command(flatten)]
        list: ListArgs,
        /// Records fetched per request
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10000))]
        page_size: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    Json,
    Jsonl,
    Csv,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[arg(value_parser = non_empty())]
    pub table: String,
    /// File to read (`-`: standard input)
    pub file: String,
    /// Input format [default: from the file extension, else sniffed from the content]
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// Check and count the rows without sending them
    #[arg(long)]
    pub dry_run: bool,
    /// Requests in flight at once
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
}

#[derive(Debug, Subcommand)]
pub enum HistorianCommand {
    /// List the historized tags of the domain.
    List,
    /// Run a read-only SQL SELECT over the domain's historian and tables (relations
    /// `historian(topic, timestamp, value)` and one per table), printing its rows.
    QuerySql {
        /// The SELECT, e.g. "SELECT topic, avg(value) FROM historian GROUP BY topic"
        #[arg(value_parser = non_empty())]
        query: String,
    },
    /// Values of a tag in a time window, raw or aggregated into buckets.
    Query {
        #[arg(value_parser = non_empty())]
        topic: String,
        /// Window start: RFC 3339, `now`, or relative like `-1h` [default: server's]
        #[arg(long, allow_hyphen_values = true)]
        start: Option<String>,
        /// Window length from the start, like `24h` or `1h30m` [default: up to now]
        #[arg(long)]
        range: Option<String>,
        /// Window end instead of a range: RFC 3339, `now`, or relative like `-5m`
        #[arg(long, allow_hyphen_values = true)]
        end: Option<String>,
        /// Bucket width for aggregation, like `5m`
        #[arg(long)]
        bucket: Option<String>,
        /// Aggregation per bucket: mean sum min max median count first last
        #[arg(long, alias = "aggregation")]
        agg: Option<String>,
        /// At most this many points
        #[arg(long, short = 'l')]
        limit: Option<u64>,
    },
    /// The newest values of a tag, newest first.
    Last {
        #[arg(value_parser = non_empty())]
        topic: String,
        /// How many values (at most 100)
        #[arg(short = 'n', long = "limit", default_value_t = 10)]
        limit: u64,
    },
    /// Export tags as gzipped CSV (columns Timestamp,<topic>…).
    Export {
        #[arg(required = true)]
        topics: Vec<String>,
        /// Start: RFC 3339, `now`, or relative like `-24h`
        #[arg(long, allow_hyphen_values = true)]
        start: String,
        /// End: RFC 3339, `now`, or relative [default: now]
        #[arg(long, allow_hyphen_values = true, default_value = "now")]
        end: String,
        /// Time zone of the timestamps and of day buckets, an IANA name like `Europe/Berlin`
        /// [default: UTC]
        #[arg(long, alias = "tz")]
        timezone: Option<String>,
        /// Resample into buckets: `<n>_<unit>` or `<n><unit>` with units ms s m h d w, like
        /// `15m` or `1_d` (days and weeks start at local midnight)
        #[arg(long)]
        sample_rate: Option<String>,
        /// Aggregation per bucket: mean sum min max median count first last, or none for raw
        /// values [default: mean with --sample-rate]
        #[arg(long, alias = "aggregation")]
        agg: Option<String>,
        /// Column name for a topic, as TOPIC=NAME (repeatable)
        #[arg(long = "map", value_name = "TOPIC=NAME", value_parser = topic_mapping)]
        mapping: Vec<(String, String)>,
        /// Add a `<name> quality` column (good, uncertain, bad) after each topic's column
        #[arg(long)]
        quality: bool,
        /// File to write (`-`: standard output)
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TagsCommand {
    /// List the tag paths of the domain.
    List,
    /// Declare a tag.
    Create {
        #[arg(value_parser = non_empty())]
        path: String,
        /// Store the tag's values in the historian
        #[arg(long)]
        historize: bool,
        #[arg(long)]
        unit: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// How long the historian keeps values, like `90d`
        #[arg(long)]
        retention: Option<String>,
        /// What the historian keeps of the values, as JSON, like
        /// '{"deviation":0.1,"max_time":"1h"}' or '{"deadband_percent":1,"span":100}'
        #[arg(long, value_parser = json_object)]
        compression: Option<serde_json::Value>,
    },
    /// Publish a JSON value on a topic (through the server).
    Publish {
        #[arg(value_parser = non_empty())]
        topic: String,
        /// The value as JSON (`21.5`, `'"text"'`, `'{"a":1}'`)
        #[arg(allow_hyphen_values = true)]
        value: String,
        /// Publish the text as a JSON string instead of parsing it
        #[arg(long)]
        string: bool,
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=2))]
        qos: u8,
        #[arg(long)]
        retain: bool,
    },
    /// Print live values of the topics matching an MQTT filter until Ctrl-C.
    Watch {
        /// MQTT topic filter (`+` and `#` wildcards)
        #[arg(default_value = "#")]
        filter: String,
        /// Exit after this many messages
        #[arg(long, short = 'c')]
        count: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum NamespacesCommand {
    /// List the namespaces of the domain.
    List,
    /// Claim a branch of the namespace for the domain.
    Create {
        #[arg(value_parser = non_empty())]
        name: String,
        /// Topic prefix such as `acme/plant1` (no wildcards)
        #[arg(value_parser = non_empty())]
        path: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// Delete a namespace, by name or record id.
    Delete {
        #[arg(value_parser = non_empty())]
        namespace: String,
    },
    /// Draw the tags below a path (the whole domain without one) with their last values.
    Tree {
        /// Topic prefix such as `acme/plant1`
        path: Option<String>,
        /// Folder levels to expand
        #[arg(long)]
        depth: Option<u32>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UpstreamsCommand {
    /// List the upstreams of the domain (passwords are never shown).
    List,
    /// Create an upstream from a JSON file (`-`: standard input).
    Create {
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Change an upstream (by name or record id) with the fields of a JSON file.
    Update {
        #[arg(value_parser = non_empty())]
        upstream: String,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Delete an upstream, by name or record id.
    Delete {
        #[arg(value_parser = non_empty())]
        upstream: String,
    },
    /// Turn an upstream's connection on (stored: it stays on across restarts).
    Connect {
        #[arg(value_parser = non_empty())]
        upstream: String,
    },
    /// Turn an upstream's connection off.
    Disconnect {
        #[arg(value_parser = non_empty())]
        upstream: String,
    },
    /// Show the connection status of one upstream, or of all of them.
    Status { upstream: Option<String> },
    /// Connect to a stored upstream (or to the one a JSON file describes) and report how it went.
    #[command(group = clap::ArgGroup::new("target").required(true).args(["upstream", "file"]))]
    Test {
        upstream: Option<String>,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConnectorsCommand {
    /// List the connectors of the domain (passwords are never shown).
    List,
    /// Create a connector from a JSON file (`-`: standard input).
    Create {
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Change a connector (by name or record id) with the fields of a JSON file.
    Update {
        #[arg(value_parser = non_empty())]
        connector: String,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Delete a connector, by name or record id.
    Delete {
        #[arg(value_parser = non_empty())]
        connector: String,
    },
    /// Show the status of one connector (with its points), or of all of them.
    Status { connector: Option<String> },
    /// Connect to a stored connector's device (or to the one a JSON file describes, nothing
    /// stored) and print what it says of itself, or why it cannot be reached.
    #[command(group = clap::ArgGroup::new("target").required(true).args(["connector", "file"]))]
    Test {
        connector: Option<String>,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: Option<String>,
    },
    /// List one level of a connector's address space (OPC UA), under NODE or the Objects
    /// folder.
    Browse {
        #[arg(value_parser = non_empty())]
        connector: String,
        #[arg(long, short = 'n', value_parser = non_empty())]
        node: Option<String>,
    },
    /// List the server certificates the domain's connectors met: pending, trusted, rejected.
    Certificates,
    /// Trust a listed server certificate (by thumbprint): connectors to that server connect.
    Trust {
        #[arg(value_parser = non_empty())]
        thumbprint: String,
    },
    /// Reject a listed server certificate (by thumbprint).
    Reject {
        #[arg(value_parser = non_empty())]
        thumbprint: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SparkplugCommand {
    /// List the Sparkplug hosts of the domain.
    List,
    /// Create a Sparkplug host from a JSON file (`-`: standard input).
    Create {
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Change a Sparkplug host (by name or record id) with the fields of a JSON file.
    Update {
        #[arg(value_parser = non_empty())]
        host: String,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Delete a Sparkplug host, by name or record id.
    Delete {
        #[arg(value_parser = non_empty())]
        host: String,
    },
    /// The edge nodes the hosts know: online or not, last BIRTH, sequence, rebirths asked.
    Nodes,
}

/// `--limit` of the run logs: the server keeps answering at most 1000 runs.
fn runs_limit() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=1000)
}

#[derive(Debug, Subcommand)]
pub enum FunctionsCommand {
    /// List the functions of the domain.
    List,
    /// Upload a .js script, .mjs ES module or .zip bundle as a function's next version.
    Deploy(DeployArgs),
    /// Run a function now and print its output (its console logs go to stderr).
    Run {
        #[arg(value_parser = non_empty())]
        name: String,
        /// The input as JSON (`'{"x":2}'`, `21.5`, `'"text"'`) [default: null]
        #[arg(long, short = 'i', allow_hyphen_values = true)]
        input: Option<String>,
    },
    /// The newest runs of a function, newest first.
    Logs {
        #[arg(value_parser = non_empty())]
        name: String,
        /// At most this many runs [default: the server's, 100]
        #[arg(long, short = 'l', value_parser = runs_limit())]
        limit: Option<u64>,
    },
    /// List the stored code versions of a function.
    Versions {
        #[arg(value_parser = non_empty())]
        name: String,
    },
    /// Make an old code version the function's next version.
    Restore {
        #[arg(value_parser = non_empty())]
        name: String,
        version: u64,
    },
}

#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The code file: `.js` script, `.mjs` ES module, or `.zip` bundle with a manifest.json
    pub file: std::path::PathBuf,
    /// Function name (letters, digits, `_`, `-`) [default: the file name without extension]
    #[arg(long, short = 'n', value_parser = non_empty())]
    pub name: Option<String>,
    /// What starts the function (repeatable; replaces all its triggers): `manual`, `http`,
    /// `tag:<topic filter>` (e.g. `tag:plant/+/temp`), `every:<N><unit>` with unit ms s m h d w
    /// (e.g. `every:5s`, `every:250ms`, `every:2m`), `cron:<pattern>` (e.g. 'cron:*/5 * * * *')
    #[arg(long = "trigger", short = 't', value_name = "SPEC", value_parser = functions::parse_trigger)]
    pub triggers: Vec<serde_json::Value>,
    /// Deploy the function disabled (its triggers do not fire)
    #[arg(long)]
    pub disabled: bool,
    /// Time limit of one run, in milliseconds
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Memory limit of the function, in MiB
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub memory_mb: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum FlowsCommand {
    /// List the flows of the domain.
    List,
    /// Create a flow from a JSON file (`{"name", "nodes", …}`; `-`: standard input), or
    /// replace the nodes and description of the flow of that name.
    Import {
        file: String,
        /// Start the flow once imported
        #[arg(long)]
        start: bool,
    },
    /// Start running a flow (its triggers and subscriptions become live).
    Start {
        #[arg(value_parser = non_empty())]
        name: String,
    },
    /// Stop a running flow.
    Stop {
        #[arg(value_parser = non_empty())]
        name: String,
    },
    /// Inject a message into a flow now and print what its debug nodes saw.
    Run {
        #[arg(value_parser = non_empty())]
        name: String,
        /// The message payload as JSON [default: null]
        #[arg(long, short = 'i', allow_hyphen_values = true)]
        input: Option<String>,
        /// Node id to inject at [default: the flow's inject nodes, else its tag-in nodes]
        #[arg(long, value_parser = non_empty())]
        node: Option<String>,
    },
    /// The newest runs of a flow, newest first.
    Logs {
        #[arg(value_parser = non_empty())]
        name: String,
        /// At most this many runs [default: the server's, 100]
        #[arg(long, short = 'l', value_parser = runs_limit())]
        limit: Option<u64>,
    },
}
