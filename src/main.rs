//! `svc`: single-binary industrial data platform. The binary is the library's command line
//! (`svc::run`): the server or a client subcommand.

use std::process::ExitCode;

fn main() -> ExitCode {
    svc::run()
}
