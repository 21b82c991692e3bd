//! `svc`: single-binary industrial data platform. Entry point: parses the command line and
//! dispatches to the server or a client subcommand.

mod broker;
mod cli;
mod client;
mod duration;
mod flows;
mod functions;
mod group_commit;
mod historian;
mod ids;
mod memory;
mod model;
mod query;
mod report_scope;
mod report_sql;
mod schedule;
mod schema;
mod server;
mod store;
mod telemetry;
mod time;
mod tls_client;
mod topic;
mod tui;
mod upstream;

use std::process::ExitCode;

fn main() -> ExitCode {
    memory::disable_transparent_huge_pages();
    let cli = cli::parse();
    match cli.command {
        cli::Command::Serve(args) => match server::run(*args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("svc serve: {err:#}");
                ExitCode::FAILURE
            }
        },
        _ => cli::run(cli),
    }
}
