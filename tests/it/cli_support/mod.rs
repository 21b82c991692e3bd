//! Helpers of the CLI end-to-end tests: runs the built `svc` binary as a client of a test
//! server, with HOME and XDG_CONFIG_HOME in a private temp dir so profiles never leak, and no
//! `SVC_*` variable inherited from the environment.

use crate::common::{Server, ADMIN_PASSWORD};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A CLI user: a private home directory and the server's URL.
pub struct Cli {
    home: tempfile::TempDir,
    pub url: String,
    /// Extra environment for every command.
    pub env: Vec<(String, String)>,
}

/// What a finished command left.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics with the whole story unless the command exited with `code`.
    pub fn expect_code(self, code: i32, what: &str) -> Run {
        assert_eq!(
            self.code, code,
            "{what}: exit {} (want {code})\nstdout: {}\nstderr: {}",
            self.code, self.stdout, self.stderr
        );
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"),
            "{what}: panic on stderr: {}",
            self.stderr
        );
        self
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    pub fn jsonl(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line `{l}`: {e}")))
            .collect()
    }

    /// CSV rows as (header, rows).
    pub fn csv(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut r = csv::Reader::from_reader(self.stdout.as_bytes());
        let header = r.headers().unwrap().iter().map(str::to_string).collect();
        let rows = r
            .records()
            .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
            .collect();
        (header, rows)
    }
}

impl Cli {
    pub fn new(server: &Server) -> Cli {
        Cli {
            home: tempfile::tempdir().expect("tempdir"),
            url: server.base.clone(),
            env: Vec::new(),
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The credentials file `svc login` writes.
    pub fn credentials(&self) -> PathBuf {
        self.home.path().join("config/svc/credentials.toml")
    }

    /// A `svc` command with the private home and `SVC_URL` set to the server.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_svc"));
        cmd.args(args);
        self.configure(&mut cmd);
        cmd
    }

    /// Gives `cmd` (any program) the private home, `SVC_URL`, and no inherited `SVC_*`.
    pub fn configure(&self, cmd: &mut Command) {
        cmd.env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("SVC_URL", &self.url);
        for var in [
            "SVC_DOMAIN",
            "SVC_API_KEY",
            "SVC_PROFILE",
            "SVC_OUTPUT",
            "SVC_CONFIG",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }

    /// Runs `svc args…` with `stdin` (empty when `None`).
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn svc");
        let input = stdin.unwrap_or("").to_string();
        let mut pipe = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
        let out: Output = child.wait_with_output().expect("wait svc");
        let _ = writer.join();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[], None)
    }

    /// Runs and expects exit 0.
    pub fn ok(&self, args: &[&str]) -> Run {
        self.run(args).expect_code(0, &args.join(" "))
    }

    /// Runs with `--output json` and expects exit 0 and JSON on stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["--output", "json"]);
        self.ok(&all).json()
    }

    /// Logs in as the admin through `--password-stdin`.
    pub fn login_admin(&self, extra: &[&str]) {
        let mut args = vec!["login", "--username", "admin", "--password-stdin"];
        args.extend(extra);
        self.run_with(&args, &[], Some(&format!("{ADMIN_PASSWORD}\n")))
            .expect_code(0, "login");
    }
}

/// A server with the domain `acme` and a CLI user logged in as admin with `acme` as the
/// profile's domain.
pub fn acme() -> (Server, Cli) {
    let server = Server::start();
    server.create_domain("acme");
    let cli = Cli::new(&server);
    cli.login_admin(&["--domain", "acme"]);
    (server, cli)
}
