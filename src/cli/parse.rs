//! Parses the command line. The client options (`--url`, `--domain`, `--api-key`, `--profile`,
//! `--output`) are global so they work before or after any client subcommand; `svc serve` has
//! settings of its own, so its help does not list them and it refuses them when given.

use super::Cli;
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, CommandFactory, FromArgMatches};

/// Ids of the global options that only client subcommands use.
const CLIENT_ONLY: [&str; 5] = ["url", "domain", "api_key", "profile", "output"];

/// The parsed command line; exits with status 2 and a message on a usage error.
pub fn parse() -> Cli {
    let command = Cli::command();
    // clap copies a global option into a subcommand only where no option of that id exists
    // yet: `serve` gets hidden copies, the same in all else.
    let hidden: Vec<Arg> = command
        .get_arguments()
        .filter(|arg| CLIENT_ONLY.contains(&arg.get_id().as_str()))
        .map(|arg| arg.clone().global(false).hide(true))
        .collect();
    let mut command = command.mut_subcommand("serve", |serve| serve.args(hidden));
    let matches = command.clone().get_matches();
    if let Some(("serve", serve)) = matches.subcommand() {
        let given = CLIENT_ONLY.iter().find(|id| {
            [&matches, serve]
                .iter()
                .any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
        });
        if let Some(id) = given {
            command
                .error(
                    ErrorKind::ArgumentConflict,
                    format!(
                        "--{} is an option of the client subcommands; `svc serve` does not take it",
                        id.replace('_', "-")
                    ),
                )
                .exit();
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}
