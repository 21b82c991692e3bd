//! The REST client shared by the command-line subcommands and the TUI: the global client
//! options, the output formats, the stored login profile, the errors, and the HTTP client.

pub mod error;
mod http;
pub mod profile;

use clap::{Args, ValueEnum};

pub use http::*;

/// The REST address used when neither `--url`, `SVC_URL` nor the profile names one.
pub const DEFAULT_URL: &str = "http://127.0.0.1:6188";

/// Options of every client subcommand (accepted before or after the subcommand).
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Base URL of the REST API [default: the profile's, else http://127.0.0.1:6188]
    #[arg(long, env = "SVC_URL", global = true)]
    pub url: Option<String>,
    /// Domain (tenant) to work in: `acme` or `domains:acme` [default: the profile's]
    #[arg(long, env = "SVC_DOMAIN", global = true)]
    pub domain: Option<String>,
    /// API key to authenticate with instead of the profile's login
    #[arg(long, env = "SVC_API_KEY", global = true, hide_env_values = true)]
    pub api_key: Option<String>,
    /// Profile holding the login (stored by `svc login`)
    #[arg(long, env = "SVC_PROFILE", global = true, default_value = "default")]
    pub profile: String,
    /// Output format [default: table on a terminal, json when piped]
    #[arg(long, value_enum, env = "SVC_OUTPUT", global = true)]
    pub output: Option<OutputFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Jsonl,
    Csv,
}
