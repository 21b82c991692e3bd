//! `svc`: single-binary industrial data platform. Entry point: parses the command line and
//! dispatches to the server or a client subcommand.

mod broker;
mod cli;
mod duration;
mod historian;
mod ids;
mod model;
mod query;
mod schema;
mod server;
mod store;
mod time;
mod topic;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Serve(args) => match server::run(*args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("svc serve: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}
