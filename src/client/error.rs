//! Errors of the client subcommands and their exit codes: usage errors exit 2, everything else
//! 1; a closed standard output (`| head`) ends the command quietly.

use std::fmt;
use std::io;

pub type CliResult<T> = Result<T, CliError>;

#[derive(Debug)]
pub enum CliError {
    /// The command line or its input is malformed (exit 2).
    Usage(String),
    /// The server answered with a non-2xx status (exit 1).
    Http {
        status: u16,
        reason: String,
        text: String,
        hint: Option<String>,
    },
    /// Anything else that failed (exit 1).
    Failed(String),
    /// The command already reported why it failed (exit 1, nothing more printed).
    Reported,
    /// Writing the output failed.
    Io(io::Error),
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }

    pub fn failed(message: impl Into<String>) -> CliError {
        CliError::Failed(message.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
            _ => 1,
        }
    }

    /// The message for stderr, if any.
    pub fn message(&self) -> Option<String> {
        match self {
            CliError::Reported => None,
            CliError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe => None,
            other => Some(other.to_string()),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "{m}"),
            CliError::Http {
                status,
                reason,
                text,
                hint,
            } => {
                write!(f, "{status} {reason}")?;
                if !text.is_empty() {
                    write!(f, ": {text}")?;
                }
                if let Some(hint) = hint {
                    write!(f, "\n{hint}")?;
                }
                Ok(())
            }
            CliError::Failed(m) => write!(f, "{m}"),
            CliError::Reported => Ok(()),
            CliError::Io(e) => write!(f, "cannot write output: {e}"),
        }
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        CliError::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(CliError::usage("x").exit_code(), 2);
        assert_eq!(CliError::failed("x").exit_code(), 1);
        assert_eq!(CliError::Reported.exit_code(), 1);
        let pipe = CliError::Io(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!((pipe.exit_code(), pipe.message()), (0, None));
    }

    #[test]
    fn http_message_has_status_and_text() {
        let e = CliError::Http {
            status: 404,
            reason: "Not Found".into(),
            text: "no record `a.b:c`".into(),
            hint: None,
        };
        assert_eq!(e.to_string(), "404 Not Found: no record `a.b:c`");
    }
}
