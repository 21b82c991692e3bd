//! svc's end of a zygote's pipes: starting one, and one run (or syntax check) as JSON lines,
//! with the host calls of the run served on the calling thread. See `runner.py` for the
//! other end.

use super::sandbox::{self, Interpreter};
use crate::functions::engine::{serve, Failure, Host, HostCall, Limits, LogBuf, Outcome, RunError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

/// How long a zygote may take to start and try its fences.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long past a run's time limit svc waits for the zygote to report the run's end.
const GRACE: Duration = Duration::from_secs(5);
/// Longest line svc reads from a run: the 1 MiB output (JSON-escaped) and some room.
const MAX_LINE_BYTES: usize = 8 << 20;

/// What the zygote found when it tried its fences from inside.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Ready {
    pub version: String,
    pub filesystem: bool,
    pub network: bool,
    pub signals: bool,
}

impl Ready {
    fn fences(&self) -> [(&'static str, bool); 6] {
        [
            ("filesystem", self.filesystem),
            ("network", self.network),
            ("signals", self.signals),
            // Each run's seccomp filter and rlimits are installed by the child, which fails
            // the run rather than run without them.
            ("fork", true),
            ("exec", true),
            ("rlimits", true),
        ]
    }

    pub fn held(&self) -> Vec<String> {
        let fences = self.fences();
        fences.iter().filter(|f| f.1).map(|f| f.0.into()).collect()
    }

    pub fn missing(&self) -> Vec<String> {
        let fences = self.fences();
        fences.iter().filter(|f| !f.1).map(|f| f.0.into()).collect()
    }
}

/// One run as the zygote reads it.
#[derive(Serialize)]
pub struct Request<'a> {
    code: &'a str,
    input: &'a Json,
    globals: Map<String, Json>,
    /// seconds
    timeout: f64,
    cpu_seconds: u64,
    /// the child's address-space limit in bytes (0: none)
    memory_limit: u64,
    check: bool,
}

impl<'a> Request<'a> {
    pub fn run(
        code: &'a str,
        input: &'a Json,
        globals: &[(&str, Json)],
        limits: &Limits,
        baseline_bytes: u64,
    ) -> Request<'a> {
        let memory_limit = match limits.memory_bytes {
            0 => 0,
            cap => baseline_bytes + cap as u64,
        };
        Request {
            code,
            input,
            globals: globals
                .iter()
                .map(|(name, value)| (name.to_string(), value.clone()))
                .collect(),
            timeout: limits.timeout.as_secs_f64(),
            cpu_seconds: limits.timeout.as_secs() + 1,
            memory_limit,
            check: false,
        }
    }
}

/// A pre-started interpreter inside its fences: a zygote that forks a child per run, or
/// (started `warm`) one process version's warm worker that runs each call itself.
pub struct Zygote {
    child: Child,
    to: ChildStdin,
    from: Lines,
    pub ready: Ready,
    /// Its address space once warm: a run's memory cap comes on top.
    pub baseline_bytes: u64,
    dead: bool,
    warm: bool,
    /// What a warm worker's last run said of the code (its `{"warm": …}` line).
    pub found: Option<Found>,
}

/// What a warm worker found when it ran the code's top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A `main`: later runs call it in the same interpreter.
    Main,
    /// No `main`: the code is the run, and must start fresh each time.
    WholeScript,
}

impl Zygote {
    pub fn spawn(
        interpreter: &Interpreter,
        runner: &str,
        scratch: &Path,
        run_filters: &[String],
        warm: bool,
    ) -> Result<Zygote, String> {
        std::fs::create_dir_all(scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let mut command = sandbox::command(interpreter, runner, scratch)?;
        let mut child = command
            .spawn()
            .map_err(|e| format!("the Python sandbox could not start: {e}"))?;
        let (Some(to), Some(from), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the Python worker has no pipes".into());
        };
        forward_stderr(stderr);
        let mut zygote = Zygote {
            baseline_bytes: 0,
            from: Lines::new(from),
            to,
            child,
            ready: Ready::default(),
            dead: false,
            warm,
            found: None,
        };
        zygote.send(&json!({ "child_filters": run_filters, "warm": warm }))?;
        let deadline = Instant::now() + START_TIMEOUT;
        let line = zygote
            .from
            .next(deadline)
            .map_err(|e| format!("the Python worker did not start: {e}"))?;
        let mut hello: Map<String, Json> = serde_json::from_slice(&line)
            .map_err(|e| format!("the Python worker said something else: {e}"))?;
        zygote.ready = hello
            .remove("ready")
            .and_then(|r| serde_json::from_value(r).ok())
            .ok_or("the Python worker did not say it was ready")?;
        zygote.baseline_bytes = address_space(zygote.child.id()).unwrap_or(0);
        Ok(zygote)
    }

    pub fn alive(&mut self) -> bool {
        !self.dead && matches!(self.child.try_wait(), Ok(None))
    }

    fn send(&mut self, message: &Json) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.to.write_all(&line).map_err(|e| {
            self.dead = true;
            format!("the Python worker stopped: {e}")
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the zygote and whatever it forked (its own process group).
    pub fn kill(&mut self) {
        self.dead = true;
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: a plain kill(2) of the zygote's process group (it called setsid).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }

    /// Compiles `code` in a fresh child; Err("line L, column C: message").
    pub fn check(&mut self, code: &str) -> Result<(), String> {
        let input = Json::Null;
        let limits = Limits {
            timeout: Duration::from_secs(10),
            memory_bytes: 256 << 20,
        };
        let mut request = Request::run(code, &input, &[], &limits, self.baseline_bytes);
        request.check = true;
        self.exchange(&request, &limits, None)
            .map(drop)
            .map_err(|e| match e.failure {
                Failure::Script(message) => message,
                other => RunError {
                    failure: other,
                    logs: Vec::new(),
                }
                .explain(&limits),
            })
    }

    pub fn run(
        &mut self,
        request: &Request,
        limits: &Limits,
        host: &dyn Host,
    ) -> Result<Outcome, RunError> {
        self.exchange(request, limits, Some(host))
    }

    fn exchange(
        &mut self,
        request: &Request,
        limits: &Limits,
        host: Option<&dyn Host>,
    ) -> Result<Outcome, RunError> {
        let mut logs = LogBuf::default();
        let mut result: Option<Result<Json, Failure>> = None;
        let stopped = |message: String, logs: LogBuf| RunError {
            failure: Failure::Script(message),
            logs: logs.lines,
        };
        if let Err(e) = self.send(&json!({ "run": request })) {
            return Err(stopped(e, logs));
        }
        // A zygote's child is timed by the zygote, a warm worker's run by svc.
        let deadline = match self.warm {
            true => Instant::now() + limits.timeout,
            false => Instant::now() + limits.timeout + GRACE,
        };
        self.found = None;
        loop {
            let line = match self.from.next(deadline) {
                Ok(line) => line,
                Err(_) if self.warm && Instant::now() >= deadline => {
                    self.kill();
                    return Err(RunError {
                        failure: Failure::Timeout,
                        logs: logs.lines,
                    });
                }
                Err(e) => {
                    self.kill();
                    return Err(stopped(format!("the Python worker failed: {e}"), logs));
                }
            };
            // A line a killed child left half-written is not JSON: skipped.
            let Ok(mut message) = serde_json::from_slice::<Map<String, Json>>(&line) else {
                continue;
            };
            if let Some(call) = message.remove("call") {
                let args = message.remove("args").unwrap_or_default();
                let reply = match (host_call(&call, args), host) {
                    (Ok(call), Some(host)) => serve(host, call),
                    (Ok(_), None) => Err("no host calls while checking".into()),
                    (Err(e), _) => Err(e),
                };
                let answer = match reply {
                    Ok(value) => json!({ "ok": value }),
                    Err(message) => json!({ "err": message }),
                };
                if let Err(e) = self.send(&answer) {
                    return Err(stopped(e, logs));
                }
            } else if let Some(Json::String(line)) = message.remove("log") {
                logs.push(line);
            } else if let Some(output) = message.remove("done") {
                result = Some(Ok(output));
            } else if let Some(error) = message.remove("error") {
                result = Some(Err(failure_of(&error)));
            } else if let Some(syntax) = message.remove("syntax") {
                result = Some(Err(Failure::Script(syntax_error(&syntax))));
            } else if let Some(found) = message.remove("warm") {
                self.found = match found.as_str() {
                    Some("main") => Some(Found::Main),
                    Some("whole") => Some(Found::WholeScript),
                    _ => None,
                };
            } else if let Some(exit) = message.remove("exit") {
                return outcome(ended(result, &exit), logs);
            }
            // A warm worker's run ends with its result: there is no child to wait for.
            if self.warm {
                if let Some(result) = result.take() {
                    return outcome(result, logs);
                }
            }
        }
    }
}

fn outcome(result: Result<Json, Failure>, logs: LogBuf) -> Result<Outcome, RunError> {
    match result {
        Ok(output) => Ok(Outcome {
            output,
            logs: logs.lines,
        }),
        Err(failure) => Err(RunError {
            failure,
            logs: logs.lines,
        }),
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A run's result once its child is gone: a time-out wins, then what the child said, then
/// how it ended.
fn ended(result: Option<Result<Json, Failure>>, exit: &Json) -> Result<Json, Failure> {
    if exit.get("timeout").and_then(Json::as_bool) == Some(true) {
        return Err(Failure::Timeout);
    }
    if let Some(result) = result {
        return result;
    }
    match exit.get("signal").and_then(Json::as_i64) {
        Some(signal) if signal == i64::from(libc::SIGXCPU) => Err(Failure::Timeout),
        Some(signal) => Err(Failure::Script(format!(
            "the Python process was killed by signal {signal}"
        ))),
        None => Err(Failure::Script(format!(
            "the Python process ended without a result (exit code {})",
            exit.get("code").unwrap_or(&Json::Null)
        ))),
    }
}

fn failure_of(error: &Json) -> Failure {
    if error.get("memory").and_then(Json::as_bool) == Some(true) {
        return Failure::Memory;
    }
    let message = error.get("message").and_then(Json::as_str);
    Failure::Script(message.unwrap_or("the Python code failed").to_string())
}

fn syntax_error(syntax: &Json) -> String {
    let message = syntax.get("message").and_then(Json::as_str);
    let message = message.unwrap_or("invalid syntax");
    match (
        syntax.get("line").and_then(Json::as_u64),
        syntax.get("column").and_then(Json::as_u64),
    ) {
        (Some(line), Some(column)) => format!("line {line}, column {column}: {message}"),
        (Some(line), None) => format!("line {line}: {message}"),
        _ => message.to_string(),
    }
}

/// A host call as the child names it, checked as JavaScript's are.
fn host_call(name: &Json, args: Json) -> Result<HostCall, String> {
    let name = name.as_str().unwrap_or_default();
    let mut args = match args {
        Json::Array(args) => args.into_iter(),
        _ => Vec::new().into_iter(),
    };
    let mut string = |what: &str| match args.next() {
        Some(Json::String(s)) => Ok(s),
        _ => Err(format!("svc.{name}: {what} must be a string")),
    };
    let call = match name {
        "tag.read" => HostCall::TagRead {
            topic: string("topic")?,
        },
        "tag.write" => HostCall::TagWrite {
            topic: string("topic")?,
            value: args.next().unwrap_or(Json::Null),
        },
        "records.create" => HostCall::RecordCreate {
            table: string("table")?,
            record: object(args.next(), name, "record")?,
        },
        "records.get" => HostCall::RecordGet { id: string("id")? },
        "records.list" => HostCall::RecordList {
            table: string("table")?,
            query: object(args.next(), name, "query")?,
        },
        _ => return Err(format!("svc has no host call `{name}`")),
    };
    Ok(call)
}

fn object(value: Option<Json>, name: &str, what: &str) -> Result<Json, String> {
    match value {
        Some(value @ Json::Object(_)) => Ok(value),
        _ => Err(format!("svc.{name}: {what} must be a dict")),
    }
}

/// The zygote's own complaints (never a run's: runs write nowhere) go to svc's log.
fn forward_stderr(stderr: std::process::ChildStderr) {
    let _ = std::thread::Builder::new()
        .name("python-stderr".into())
        .spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                tracing::warn!("python worker: {line}");
            }
        });
}

/// The virtual size of process `pid` in bytes (Linux `/proc/<pid>/statm`).
fn address_space(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Lines from a pipe, each read under a deadline and a length cap.
struct Lines {
    pipe: ChildStdout,
    buf: Vec<u8>,
    scanned: usize,
}

impl Lines {
    fn new(pipe: ChildStdout) -> Lines {
        Lines {
            pipe,
            buf: Vec::new(),
            scanned: 0,
        }
    }

    /// The next line (without its newline).
    fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, String> {
        loop {
            if let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + at;
                let line = self.buf[..end].to_vec();
                self.buf.drain(..=end);
                self.scanned = 0;
                return Ok(line);
            }
            self.scanned = self.buf.len();
            if self.buf.len() > MAX_LINE_BYTES {
                return Err(format!("it sent a message over {MAX_LINE_BYTES} bytes"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("it stopped answering".into());
            }
            // poll counts whole milliseconds and may wake a little early: look again.
            if !readable(&self.pipe, left) {
                continue;
            }
            let mut chunk = [0u8; 64 << 10];
            match self.pipe.read(&mut chunk) {
                Ok(0) => return Err("it exited".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// Waits up to `timeout` for `pipe` to have data (or be closed).
fn readable(pipe: &ChildStdout, timeout: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: pipe.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = i32::try_from(timeout.as_millis())
        .unwrap_or(i32::MAX)
        .max(1);
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut poll, 1, millis) > 0 }
}
