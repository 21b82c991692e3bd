//! Command-line shape of the `svc` binary: the subcommands and their arguments.

use crate::server::settings::ServeArgs;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "svc",
    version,
    about = "Industrial data platform: REST API, MQTT broker and historian in one binary"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the REST API (and, with it, everything the platform serves) over the data directory.
    Serve(Box<ServeArgs>),
}
