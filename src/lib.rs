//! `svc`: single-binary industrial data platform, as a library: the server, the broker, the
//! store and the API clients, with [`run`] the whole command line. `src/main.rs` is the thin
//! binary around it; a library target lets tests and tools build parts of svc in process.

mod alarms;
mod backoff;
mod broker;
mod cli;
mod client;
mod connectors;
mod duration;
mod fields;
mod flows;
mod functions;
mod group_commit;
mod historian;
mod ids;
mod memory;
mod model;
mod query;
mod report_sql;
mod schedule;
mod schema;
mod server;
mod sparkplug;
mod store;
mod telemetry;
mod time;
mod tls_client;
mod topic;
mod tui;
mod upstream;

use std::process::ExitCode;

/// Parses the command line and runs what it names: `svc serve` or a client subcommand.
pub fn run() -> ExitCode {
    memory::disable_transparent_huge_pages();
    memory::give_back_freed_pages_at_once();
    if let Some(code) = cli::dist_files::run_if_asked() {
        return code;
    }
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
