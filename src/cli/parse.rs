//! Parses the command line. The client options (`--url`, `--domain`, `--api-key`, `--profile`,
//! `--output`) are global so they work before or after any client subcommand; the subcommands
//! that talk to no server (`serve`, `restore`, `migrate`, `completions`) do not list them in
//! their help or completions and refuse them when given.

use super::Cli;
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, CommandFactory, FromArgMatches};

/// Ids of the global options that only client subcommands use.
const CLIENT_ONLY: [&str; 5] = ["url", "domain", "api_key", "profile", "output"];

/// Subcommands that run without a server: the client options mean nothing to them.
const LOCAL: [&str; 4] = ["serve", "restore", "migrate", "completions"];

/// The client options as the top-level command defines them.
fn client_options(command: &clap::Command) -> impl Iterator<Item = &Arg> {
    command
        .get_arguments()
        .filter(|arg| CLIENT_ONLY.contains(&arg.get_id().as_str()))
}

/// The command-line definition as parsed.
pub fn command() -> clap::Command {
    let command = Cli::command();
    // clap copies a global option into a subcommand only where no option of that id exists
    // yet: the local subcommands get hidden copies, the same in all else.
    let hidden: Vec<Arg> = client_options(&command)
        .map(|arg| arg.clone().global(false).hide(true))
        .collect();
    LOCAL.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |local| local.args(hidden.clone()))
    })
}

/// The command line as shell completions describe it: completion generators list hidden
/// options too, so here the client options are not global at the top (they still complete
/// before a subcommand) but given to each client subcommand and what is beneath it.
pub fn completion_command() -> clap::Command {
    let command = Cli::command();
    let options: Vec<Arg> = client_options(&command).cloned().collect();
    let clients: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .filter(|name| !LOCAL.contains(&name.as_str()))
        .collect();
    let command = CLIENT_ONLY.iter().fold(command, |command, id| {
        command.mut_arg(id, |arg| arg.global(false))
    });
    clients.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |client| client.args(options.clone()))
    })
}

/// The parsed command line; exits with status 2 and a message on a usage error.
pub fn parse() -> Cli {
    let mut command = command();
    let matches = command.clone().get_matches();
    if let Some((name, local)) = matches
        .subcommand()
        .filter(|(name, _)| LOCAL.contains(name))
    {
        let given = CLIENT_ONLY.iter().find(|id| {
            [&matches, local]
                .iter()
                .any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
        });
        if let Some(id) = given {
            command
                .error(
                    ErrorKind::ArgumentConflict,
                    format!(
                        "--{} is an option of the client subcommands; `svc {name}` does not take it",
                        id.replace('_', "-")
                    ),
                )
                .exit();
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}
