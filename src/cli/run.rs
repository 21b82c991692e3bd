//! Runs a client subcommand: resolves the output format and the REST client, dispatches, and
//! maps the outcome to the exit code (0 ok, 1 failure, 2 usage) with the message on stderr.

use super::client::Client;
use super::error::{CliError, CliResult};
use super::{
    alarms, auth, backup, connectors, flows, functions, historian, keys, migrate, namespaces,
    output, records, sparkplug, tags, upstreams,
};
use super::{Cli, Command};
use crate::model::DeviceInfo;
use std::io::Write;
use std::process::ExitCode;

/// Runs a client subcommand (everything but `serve`).
pub fn run(cli: Cli) -> ExitCode {
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(message) = err.message() {
                eprintln!("svc: error: {message}");
            }
            ExitCode::from(err.exit_code())
        }
    }
}

fn dispatch(cli: Cli) -> CliResult<()> {
    let global = cli.global;
    let format = output::resolve(global.output);
    match cli.command {
        Command::Serve(_) => Err(CliError::failed("`serve` is not a client subcommand")),
        Command::Tui(args) => {
            crate::tui::run(&global, args).map_err(|e| CliError::failed(format!("{e:#}")))
        }
        Command::Login(args) => auth::login(&global, &args),
        Command::Logout => auth::logout(&global),
        Command::Completions { shell } => {
            let mut cmd = super::parse::completion_command();
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            clap_complete::generate(shell, &mut cmd, "svc", &mut out);
            out.flush()?;
            Ok(())
        }
        Command::Keys(c) => keys::run(&Client::from_args(&global)?, format, c),
        Command::Records(c) => records::run(&Client::from_args(&global)?, format, c),
        Command::Historian(c) => historian::run(&Client::from_args(&global)?, format, c),
        Command::Tags(c) => tags::run(&Client::from_args(&global)?, format, c),
        Command::Namespaces(c) => namespaces::run(&Client::from_args(&global)?, format, c),
        Command::Upstreams(c) => upstreams::run(&Client::from_args(&global)?, format, c),
        Command::Connectors(c) => connectors::run(&Client::from_args(&global)?, format, c),
        Command::Sparkplug(c) => sparkplug::run(&Client::from_args(&global)?, format, c),
        Command::Alarms(c) => alarms::run(&Client::from_args(&global)?, format, c),
        Command::Functions(c) => functions::run(&Client::from_args(&global)?, format, c),
        Command::Flows(c) => flows::run(&Client::from_args(&global)?, format, c),
        Command::Backup { file } => backup::backup(&Client::from_args(&global)?, &file),
        Command::Restore { file, data_dir } => backup::restore(&file, &data_dir),
        Command::Migrate(args) => migrate::run(&args),
        Command::Info => {
            let client = Client::from_args(&global)?;
            let info: DeviceInfo = client.get("/svc/")?;
            let value = serde_json::to_value(&info).unwrap_or_default();
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            output::object(&mut out, format, &value)?;
            out.flush()?;
            Ok(())
        }
    }
}
