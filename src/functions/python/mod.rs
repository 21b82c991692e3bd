//! Python processes: the system's `python3`, started once per worker inside the fences of
//! [`sandbox`] as a *zygote* (`runner.py`) that forks a fresh child per run, so a run starts
//! without an interpreter start-up and nothing survives it. svc and the child speak JSON
//! lines over the zygote's pipes: the host API (`svc.tag.read/write`, `svc.records.*`,
//! `svc.log`) goes to the same [`Host`] as JavaScript's, and the outcome comes back as an
//! [`Outcome`] or a [`RunError`] like an engine run's.
//!
//! # Limits
//! - Time: the zygote kills the child when `limits.timeout` has passed since the fork
//!   ([`Failure::Timeout`]); the child's CPU-time rlimit backs that up.
//! - Memory: `limits.memory_bytes` on top of the interpreter's own address space, as the
//!   child's `RLIMIT_AS`; an allocation past it raises `MemoryError` ([`Failure::Memory`]).
//! - Output: at most 1 MiB of JSON; log lines as for JavaScript.
//!
//! Workers are started on demand, one per CPU at most, and replaced when one dies. A deployed
//! process version keeps a warm worker of its own instead ([`warm`]) unless it asks for fresh
//! state.

mod protocol;
mod sandbox;
mod warm;

pub use warm::{register, retire};

use super::engine::{Failure, Host, Limits, Outcome, RunError};
use protocol::Zygote;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};

/// The zygote's source, run as `python3 -I -c <RUNNER>`.
const RUNNER: &str = include_str!("runner.py");
/// Where svc looks for the interpreter when the `python` setting does not say.
const DEFAULT_INTERPRETERS: &[&str] = &["/usr/bin/python3", "/usr/local/bin/python3"];

/// What `GET /svc/` says of Python.
pub use crate::model::PythonInfo as Report;

/// The running Python service.
struct Python {
    interpreter: sandbox::Interpreter,
    run_filters: Vec<String>,
    scratch_base: PathBuf,
    max_workers: usize,
    pool: Mutex<Pool>,
    freed: Condvar,
    /// The zygote kept for save-time syntax checks, so that a check never waits for runs.
    checker: Mutex<Option<Zygote>>,
    /// What the first worker found when it tried its fences (every worker runs in the same
    /// fences).
    ready: protocol::Ready,
}

#[derive(Default)]
struct Pool {
    idle: Vec<Zygote>,
    started: usize,
    next_id: usize,
}

static PYTHON: OnceLock<Result<Python, Box<Report>>> = OnceLock::new();

/// Finds (unless `interpreter` names it) and tries the interpreter once (at server start);
/// later calls return the first report.
pub fn start(data_dir: &Path, interpreter: Option<&Path>) -> Report {
    let started = PYTHON.get_or_init(|| Python::start(data_dir, interpreter));
    match started {
        Ok(python) => python.report(),
        Err(report) => (**report).clone(),
    }
}

/// The report of [`start`] (unavailable if it was never called).
pub fn report() -> Report {
    match PYTHON.get() {
        Some(Ok(python)) => python.report(),
        Some(Err(report)) => (**report).clone(),
        None => unavailable("Python was not started".into()),
    }
}

fn unavailable(reason: String) -> Report {
    Report {
        available: false,
        interpreter: None,
        version: None,
        sandbox: Vec::new(),
        missing: Vec::new(),
        reason: Some(reason),
    }
}

fn service() -> Result<&'static Python, String> {
    match PYTHON.get() {
        Some(Ok(python)) => Ok(python),
        Some(Err(report)) => Err(format!(
            "Python is not available on this server: {}",
            report.reason.as_deref().unwrap_or("unknown")
        )),
        None => Err("Python is not available on this server".into()),
    }
}

/// Runs Python `code` on `input` with read-only `globals` (`inputs`, `config`): in the warm
/// worker of `instance` when it keeps one ([`warm`]), else in a forked child of a zygote.
pub fn run(
    instance: Option<u64>,
    code: &str,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Result<Outcome, RunError> {
    let failed = |message: String| RunError {
        failure: Failure::Script(message),
        logs: Vec::new(),
    };
    let python = service().map_err(failed)?;
    if let Some(id) = instance {
        if let Some(result) = warm::run(python, id, code, input, globals, limits, host) {
            return result;
        }
    }
    let mut zygote = python.take().map_err(failed)?;
    let request = protocol::Request::run(code, input, globals, limits, zygote.baseline_bytes);
    let result = zygote.run(&request, limits, host);
    python.give_back(zygote);
    result
}

/// Compiles `code` without running it: the inner Err names the syntax error with its line and
/// column, the outer one why Python cannot check code here.
pub fn check(code: &str) -> Result<Result<(), String>, String> {
    let python = service()?;
    let mut slot = python.checker.lock().unwrap_or_else(|e| e.into_inner());
    if slot.as_mut().is_none_or(|z| !z.alive()) {
        *slot = Some(python.spawn(usize::MAX)?);
    }
    let Some(zygote) = slot.as_mut() else {
        return Err("the Python checker could not start".into());
    };
    Ok(zygote.check(code))
}

impl Python {
    fn start(data_dir: &Path, configured: Option<&Path>) -> Result<Python, Box<Report>> {
        let unavailable = |reason: String| Box::new(unavailable(reason));
        let exe = match configured {
            Some(path) => path.to_path_buf(),
            None => find_interpreter().ok_or_else(|| {
                unavailable("no python3 found (the `python` setting names one)".into())
            })?,
        };
        let interpreter = sandbox::probe(&exe).map_err(unavailable)?;
        if let Some(path) = sandbox::exposes(&interpreter.reads, data_dir) {
            return Err(unavailable(format!(
                "the data dir lies beneath {}, which Python must read",
                path.display()
            )));
        }
        let run_filters = sandbox::run_filters()
            .map_err(unavailable)?
            .iter()
            .map(|bytes| hex(bytes))
            .collect();
        // Beneath the data dir, so that what a killed server left is removed at the next start.
        let scratch_base = data_dir.join("python");
        let _ = std::fs::remove_dir_all(&scratch_base);
        let max_workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut python = Python {
            interpreter,
            run_filters,
            scratch_base,
            max_workers,
            pool: Mutex::new(Pool::default()),
            freed: Condvar::new(),
            checker: Mutex::new(None),
            ready: protocol::Ready::default(),
        };
        // The first worker both proves the fences and serves the first run.
        let first = python.spawn(0).map_err(unavailable)?;
        let missing = first.ready.missing();
        if let Some(essential) = missing
            .iter()
            .find(|m| *m == "filesystem" || *m == "network")
        {
            return Err(Box::new(Report {
                missing: missing.clone(),
                ..*unavailable(format!(
                    "the {essential} sandbox cannot be set up on this machine"
                ))
            }));
        }
        python.ready = first.ready.clone();
        {
            let mut pool = python.pool.lock().unwrap_or_else(|e| e.into_inner());
            pool.started = 1;
            pool.next_id = 1;
            pool.idle.push(first);
        }
        Ok(python)
    }

    fn report(&self) -> Report {
        let ready = &self.ready;
        Report {
            available: true,
            interpreter: Some(self.interpreter.exe.display().to_string()),
            version: Some(ready.version.clone()),
            sandbox: ready.held(),
            missing: ready.missing(),
            reason: None,
        }
    }

    /// An idle worker, a new one while fewer than the limit run, or the next one freed.
    fn take(&self) -> Result<Zygote, String> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(mut zygote) = pool.idle.pop() {
                if zygote.alive() {
                    return Ok(zygote);
                }
                pool.started -= 1;
                continue;
            }
            if pool.started < self.max_workers {
                pool.started += 1;
                let id = pool.next_id;
                pool.next_id += 1;
                drop(pool);
                let spawned = self.spawn(id);
                if spawned.is_err() {
                    self.pool.lock().unwrap_or_else(|e| e.into_inner()).started -= 1;
                }
                return spawned;
            }
            pool = self.freed.wait(pool).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn give_back(&self, mut zygote: Zygote) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if zygote.alive() {
            pool.idle.push(zygote);
        } else {
            pool.started -= 1;
        }
        drop(pool);
        self.freed.notify_one();
    }

    fn spawn(&self, id: usize) -> Result<Zygote, String> {
        let scratch = if id == usize::MAX {
            self.scratch_base.join("check")
        } else {
            self.scratch_base.join(format!("worker-{id}"))
        };
        Zygote::spawn(
            &self.interpreter,
            RUNNER,
            &scratch,
            &self.run_filters,
            false,
        )
    }
}

/// The first of [`DEFAULT_INTERPRETERS`] that exists, else `python3` on `PATH`.
fn find_interpreter() -> Option<PathBuf> {
    let found = DEFAULT_INTERPRETERS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    found.or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("python3"))
                .find(|p| p.is_file())
        })
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
