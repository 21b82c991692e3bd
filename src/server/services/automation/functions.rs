//! Deployed functions: one worker per function that runs its jobs one after another (or side
//! by side when the function allows overlap), timers for its interval and cron triggers, and
//! the run itself: the sandbox on the thread that serves a message-triggered job, or on a
//! blocking thread for a call over HTTP (see [`super::RunPlace`]), then one entry in the run
//! log.

use super::host::ServerHost;
use super::{chain_origin, Automation, RunPlace, Tasks};
use crate::functions::engine::{self, Outcome, RunError};
use crate::functions::{FunctionDef, Instance, RunRecord};
use crate::schedule::Schedule;
use crate::server::AppState;
use crate::store::{Leadership, RunOwner};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Events queued per function before new ones are dropped (and logged).
pub const QUEUE: usize = 10_000;

pub type RunResult = Result<Outcome, RunError>;

/// One run to do.
pub struct Job {
    pub input: Value,
    /// Place in a chain of automations (1: started by a device, a timer or a call).
    pub depth: u32,
    pub trigger: &'static str,
    pub reply: Option<oneshot::Sender<(RunResult, u64)>>,
}

/// A function as it is deployed: its definition and the tasks that serve it.
pub struct Deployed {
    pub def: Arc<FunctionDef>,
    jobs: mpsc::Sender<Job>,
    /// Jobs queued or running.
    pending: Arc<AtomicUsize>,
    /// For a function whose runs may overlap: what a call needs to start its run itself,
    /// rather than hand it to the queue's task to start (one task hop fewer per call).
    direct: Option<(AppState, String, Deployment)>,
    /// Held for their lifetime: dropping the deployment stops them.
    _tasks: Tasks,
}

impl Deployed {
    /// Starts serving `def`, a new [`Instance`]: whatever runtime an earlier deployment of the
    /// function kept warm is not this one's.
    pub fn start(state: &AppState, domain: &str, def: FunctionDef) -> Deployed {
        let def = Arc::new(def);
        let instance = Arc::new(Instance::new());
        let (jobs, queue) = mpsc::channel(QUEUE);
        let pending = Arc::new(AtomicUsize::new(0));
        let mut tasks = Tasks::default();
        let deployment = Deployment {
            def: Arc::clone(&def),
            instance,
        };
        let direct = def
            .allow_overlap
            .then(|| (state.clone(), domain.to_string(), deployment.clone()));
        tasks.spawn(serve_jobs(
            state.clone(),
            domain.to_string(),
            deployment,
            queue,
            Arc::clone(&pending),
        ));
        if def.enabled {
            for trigger in &def.triggers {
                if let Some(Ok(schedule)) = trigger.schedule() {
                    tasks.spawn(fire_on_schedule(
                        state.peers.leadership(),
                        schedule,
                        trigger.kind(),
                        jobs.clone(),
                        Arc::clone(&pending),
                        def.allow_overlap,
                    ));
                }
            }
        }
        Deployed {
            def,
            jobs,
            pending,
            direct,
            _tasks: tasks,
        }
    }

    /// Queues a job; false when the queue is full (the event is dropped).
    pub fn offer(&self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.jobs.try_send(job).is_ok() {
            true
        } else {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            false
        }
    }

    /// Queues a job (or, when runs may overlap, starts it) and waits for its result. Once
    /// started, a run ends and is logged even if the caller goes away: it is the queue's task,
    /// or its code runs in place and its outputs and log entry in a task of their own.
    pub async fn call(&self, input: Value, trigger: &'static str) -> Option<(RunResult, u64)> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if let Some((state, domain, deployment)) = &self.direct {
            let _done = Done(Arc::clone(&self.pending));
            let deployment = deployment.clone();
            let outcome =
                run_function(state, domain, deployment, input, trigger, 1, RunPlace::Pool);
            return Some(outcome.await);
        }
        let (reply, answer) = oneshot::channel();
        let job = Job {
            input,
            depth: 1,
            trigger,
            reply: Some(reply),
        };
        if self.jobs.send(job).await.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        answer.await.ok()
    }
}

/// Counts a call's run out of its function's pending jobs when the call ends, however it
/// ends (a caller that goes away drops it).
struct Done(Arc<AtomicUsize>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a run runs: the definition, and the instance whose warm runtime it runs in.
#[derive(Clone)]
pub struct Deployment {
    pub def: Arc<FunctionDef>,
    pub instance: Arc<Instance>,
}

async fn serve_jobs(
    state: AppState,
    domain: String,
    deployment: Deployment,
    mut queue: mpsc::Receiver<Job>,
    pending: Arc<AtomicUsize>,
) {
    while let Some(job) = queue.recv().await {
        let run = run_job(
            state.clone(),
            domain.clone(),
            deployment.clone(),
            job,
            Arc::clone(&pending),
        );
        if deployment.def.allow_overlap {
            tokio::spawn(run);
        } else {
            run.await;
        }
    }
}

async fn run_job(
    state: AppState,
    domain: String,
    deployment: Deployment,
    job: Job,
    pending: Arc<AtomicUsize>,
) {
    // A call someone waits for over HTTP may come with many others: see [`RunPlace`].
    let place = match job.reply {
        Some(_) => RunPlace::Pool,
        None => RunPlace::InPlace,
    };
    let (input, trigger, depth) = (job.input, job.trigger, job.depth);
    let outcome = run_function(&state, &domain, deployment, input, trigger, depth, place).await;
    pending.fetch_sub(1, Ordering::SeqCst);
    if let Some(reply) = job.reply {
        let _ = reply.send(outcome);
    }
}

/// Fires a timer trigger; a firing while the function is still busy is skipped, so slow runs
/// never pile up behind a fast schedule. Only the leading instance of those sharing the store
/// fires, so a timer fires once however many run.
async fn fire_on_schedule(
    leadership: Leadership,
    schedule: Schedule,
    trigger: &'static str,
    jobs: mpsc::Sender<Job>,
    pending: Arc<AtomicUsize>,
    allow_overlap: bool,
) {
    loop {
        let now = chrono::Utc::now();
        let Some(next) = schedule.next_after(now) else {
            return;
        };
        let wait = (next - now).to_std().unwrap_or_default();
        tokio::time::sleep(wait).await;
        if !leadership.is_leader() {
            continue;
        }
        if !allow_overlap && pending.load(Ordering::SeqCst) > 0 {
            tracing::debug!("skipped a {trigger} firing: the previous run is still going");
            continue;
        }
        pending.fetch_add(1, Ordering::SeqCst);
        let job = Job {
            input: serde_json::json!({"trigger": trigger, "time": crate::time::now_rfc3339()}),
            depth: 1,
            trigger,
            reply: None,
        };
        if jobs.try_send(job).is_err() {
            pending.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Runs a function once in the sandbox, its code where `place` says, and logs the run; also
/// returns the duration in ms.
pub async fn run_function(
    state: &AppState,
    domain: &str,
    deployment: Deployment,
    input: Value,
    trigger: &'static str,
    depth: u32,
    place: RunPlace,
) -> (RunResult, u64) {
    let started_dt = crate::time::now_rfc3339();
    let started = Instant::now();
    let slot = Arc::clone(&state.automation.slots).acquire_owned().await;
    let origin = chain_origin(
        &Automation::function_origin(domain, &deployment.def.name),
        depth,
    );
    let host = Arc::new(ServerHost::new(
        state.clone(),
        domain,
        origin,
        tokio::runtime::Handle::current(),
    ));
    // The inputs and the code on this thread, which serves the code's host calls itself.
    let ran = {
        let (deployment, host) = (deployment.clone(), Arc::clone(&host));
        let run = move || super::process::run_code(&deployment, &input, &host);
        super::run_blocking(place, run).await
    };
    // The outputs and the log entry in a task of its own, so that they happen even if the
    // caller goes away now. Spawned from a worker, it runs on that worker next: the outputs'
    // subscribers are woken there too, with no other thread to wake on the way.
    let (state, domain) = (state.clone(), domain.to_string());
    let finish = tokio::spawn(async move {
        let _slot = slot;
        let result = match ran {
            Ok(Ok(outcome)) => super::process::apply_outputs(&deployment.def, outcome, &host).await,
            Ok(Err(failed)) => Err(failed),
            Err(lost) => Err(lost_run(lost)),
        };
        let def = &deployment.def;
        log_run(&state, &domain, def, trigger, started_dt, started, result)
    });
    finish.await.unwrap_or_else(|lost| (Err(lost_run(lost)), 0))
}

fn lost_run(e: tokio::task::JoinError) -> RunError {
    RunError {
        failure: engine::Failure::Script(format!("the run was lost: {e}")),
        logs: Vec::new(),
    }
}

/// Counts a finished run and hands its entry to the run log; the result and its duration.
fn log_run(
    state: &AppState,
    domain: &str,
    def: &FunctionDef,
    trigger: &str,
    started_dt: String,
    started: Instant,
    result: RunResult,
) -> (RunResult, u64) {
    crate::telemetry::get().run("function", result.is_ok(), started.elapsed());
    let duration_ms = started.elapsed().as_millis() as u64;
    // Without `log_enabled` only failures are logged: they stay visible and counted.
    if def.log_enabled || result.is_err() {
        let error = result.as_ref().err().map(|e| e.explain(&def.limits()));
        let run = run_record(&def.name, started_dt, trigger, duration_ms, &result, error);
        let logged = (domain.to_string(), RunOwner::Function, run);
        state.automation.run_log.send(logged);
    }
    (result, duration_ms)
}

pub fn run_record(
    name: &str,
    started_dt: String,
    trigger: &str,
    duration_ms: u64,
    result: &RunResult,
    error: Option<String>,
) -> RunRecord {
    let (success, logs, output) = match result {
        Ok(outcome) => (
            true,
            outcome.logs.clone(),
            Some(kept_output(&outcome.output)),
        ),
        Err(e) => (false, e.logs.clone(), None),
    };
    RunRecord {
        id: 0,
        name: name.to_string(),
        started_dt,
        trigger: trigger.to_string(),
        duration_ms,
        success,
        error,
        logs,
        output,
    }
}

/// Largest output kept in the run log as it is; bigger ones are summarised.
const MAX_LOGGED_OUTPUT: usize = 16 << 10;

fn kept_output(output: &Value) -> Value {
    let size = output.to_string().len();
    if size <= MAX_LOGGED_OUTPUT {
        output.clone()
    } else {
        Value::String(format!("… output of {size} bytes not kept"))
    }
}
