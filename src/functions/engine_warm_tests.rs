//! Tests of warm contexts (`run_kept`): module-level state kept between runs of one instance,
//! never seen by another, and gone after every recycle condition the engine decides alone.

use super::*;
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A host whose only state is its tags.
#[derive(Default)]
struct Tags(RefCell<BTreeMap<String, Json>>);

impl Host for Tags {
    fn tag_read(&self, topic: &str) -> Result<Option<Json>, String> {
        Ok(self.0.borrow().get(topic).cloned())
    }
    fn tag_write(&self, topic: &str, value: &Json) -> Result<(), String> {
        self.0.borrow_mut().insert(topic.into(), value.clone());
        Ok(())
    }
    fn record_create(&self, _: &str, _: &Json) -> Result<Json, String> {
        Err("no records here".into())
    }
    fn record_get(&self, _: &str) -> Result<Option<Json>, String> {
        Err("no records here".into())
    }
    fn record_list(&self, _: &str, _: &Json) -> Result<Json, String> {
        Err("no records here".into())
    }
}

/// A registered instance id no other test uses (tests run side by side in one process).
fn instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    register(id);
    id
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_millis(300),
        memory_bytes: 16 << 20,
    }
}

fn kept(id: u64, code: &str, input: Json) -> Result<Outcome, RunError> {
    run_kept(
        id,
        &Source::script(code),
        &input,
        &[],
        &limits(),
        &Tags::default(),
    )
}

fn counted(id: u64, code: &str, input: Json) -> Json {
    match kept(id, code, input) {
        Ok(outcome) => outcome.output,
        Err(e) => panic!("{code}: {e}"),
    }
}

/// Counts its runs in module-level state; `"loop"` runs for ever, `"hog"` allocates past any
/// cap, `"deep"` recurses past the stack, `"throw"` fails, `"throw-pending"` fails with a job
/// queued.
const COUNTER: &str = "
let runs = 0;
function main(what) {
  runs += 1;
  if (what === 'loop') { for (;;) {} }
  if (what === 'hog') { const a = []; for (;;) a.push(new Array(1e5).fill(runs)); }
  if (what === 'deep') { const f = (n) => f(n + 1) + 1; return f(0); }
  if (what === 'throw') throw new Error('asked to');
  if (what === 'throw-pending') { Promise.resolve().then(() => {}); throw new Error('asked to'); }
  return runs;
}";

#[test]
fn module_level_state_persists_between_runs_of_one_instance() {
    let id = instance();
    for expected in 1..=3 {
        assert_eq!(counted(id, COUNTER, json!(null)), json!(expected));
    }
    // An uncaught error that leaves no job queued keeps the state as the code left it.
    let failed = kept(id, COUNTER, json!("throw")).unwrap_err();
    assert!(failed.to_string().contains("asked to"), "{failed}");
    assert_eq!(counted(id, COUNTER, json!(null)), json!(5));
}

#[test]
fn instances_with_the_same_globals_never_see_each_others_state() {
    let (a, b) = (instance(), instance());
    assert_eq!(counted(a, COUNTER, json!(null)), json!(1));
    assert_eq!(counted(a, COUNTER, json!(null)), json!(2));
    assert_eq!(counted(b, COUNTER, json!(null)), json!(1));
    let spy = "function main() { return [typeof runs, globalThis.leak ?? null]; }";
    let c = instance();
    assert_eq!(counted(c, spy, json!(null)), json!(["undefined", null]));
    let leaker = "globalThis.leak = 1; Object.prototype.leak = 2; function main() { return leak; }";
    assert_eq!(counted(instance(), leaker, json!(null)), json!(1));
    assert_eq!(counted(c, spy, json!(null)), json!(["undefined", null]));
}

#[test]
fn a_retired_instance_keeps_nothing() {
    let id = instance();
    assert_eq!(counted(id, COUNTER, json!(null)), json!(1));
    assert_eq!(counted(id, COUNTER, json!(null)), json!(2));
    retire(id);
    // Unregistered now: every run starts fresh.
    assert_eq!(counted(id, COUNTER, json!(null)), json!(1));
    assert_eq!(counted(id, COUNTER, json!(null)), json!(1));
}

#[test]
fn a_run_that_hits_a_limit_or_leaves_jobs_leaves_no_state() {
    for (what, failure) in [
        ("loop", Some(Failure::Timeout)),
        ("hog", Some(Failure::Memory)),
        ("deep", None),
        ("throw-pending", None),
    ] {
        let id = instance();
        assert_eq!(counted(id, COUNTER, json!(null)), json!(1), "{what}");
        assert_eq!(counted(id, COUNTER, json!(null)), json!(2), "{what}");
        let failed = kept(id, COUNTER, json!(what)).unwrap_err();
        match &failure {
            Some(expected) => assert_eq!(&failed.failure, expected, "{what}"),
            None => assert!(matches!(failed.failure, Failure::Script(_)), "{what}"),
        }
        assert_eq!(counted(id, COUNTER, json!(null)), json!(1), "after {what}");
    }
}

#[test]
fn each_run_gets_its_own_input_globals_and_svc_objects() {
    let id = instance();
    let code = "
const first = input;
const tag = svc.tag;
function main(i) {
  const seen = [first, i, input, inputs.n, config.k, typeof svc.mark];
  svc.mark = 1;
  tag.write('t', i);
  return seen;
}";
    let run = |n: u64, host: &Tags| {
        run_kept(
            id,
            &Source::script(code),
            &json!(n),
            &[
                ("inputs", json!({"n": n * 10})),
                ("config", json!({"k": n})),
            ],
            &limits(),
            host,
        )
        .unwrap()
        .output
    };
    let (one, two) = (Tags::default(), Tags::default());
    assert_eq!(run(1, &one), json!([1, 1, 1, 10, 1, "undefined"]));
    // Top-level code ran once; the run's globals and `svc` are new; a host function kept from
    // the first run serves the second run's host.
    assert_eq!(run(2, &two), json!([1, 2, 2, 20, 2, "undefined"]));
    assert_eq!(one.0.borrow().get("t"), Some(&json!(1)));
    assert_eq!(two.0.borrow().get("t"), Some(&json!(2)));
}

#[test]
fn a_script_without_main_runs_whole_every_time() {
    let id = instance();
    let code =
        "const doubled = input * 2; globalThis.seen = (globalThis.seen ?? 0) + 1; [doubled, seen]";
    assert_eq!(counted(id, code, json!(2)), json!([4, 1]));
    assert_eq!(counted(id, code, json!(3)), json!([6, 1]));
}

#[test]
fn an_es_module_keeps_its_state_and_evaluates_once() {
    let id = instance();
    let modules = BTreeMap::from([(
        "store.js".to_string(),
        "export const seen = new Map();".to_string(),
    )]);
    let code = "
import { seen } from './store.js';
const started = await Promise.resolve(input);
export default async function (key) {
  seen.set(key, (seen.get(key) ?? 0) + 1);
  return [started, seen.size, seen.get(key)];
}";
    let run = |key: &str| {
        run_kept(
            id,
            &Source::module(code, &modules),
            &json!(key),
            &[],
            &limits(),
            &Tags::default(),
        )
        .unwrap()
        .output
    };
    assert_eq!(run("a"), json!(["a", 1, 1]));
    assert_eq!(run("b"), json!(["a", 2, 1]));
    assert_eq!(run("a"), json!(["a", 2, 2]));
}

#[test]
fn a_failed_evaluation_is_not_kept() {
    let id = instance();
    let code = "
globalThis.tries = (globalThis.tries ?? 0) + 1;
if (input === 'fail') throw new Error('cannot start');
function main() { return tries; }";
    assert!(kept(id, code, json!("fail")).is_err());
    assert_eq!(counted(id, code, json!(null)), json!(1));
    assert_eq!(counted(id, code, json!(null)), json!(1));
}

#[test]
fn a_warm_context_reports_what_it_holds() {
    let id = instance();
    let code = "const big = new Map(); function main(n) { for (let i = 0; i < n; i++) big.set(i, 'v' + i); return big.size; }";
    // 10,000 inserts in a debug build on a busy machine may take longer than `limits()`'s
    // 300 ms: this test is about what the context holds, not about time.
    let patient = Limits {
        timeout: Duration::from_secs(10),
        ..limits()
    };
    let filled = run_kept(
        id,
        &Source::script(code),
        &json!(10_000),
        &[],
        &patient,
        &Tags::default(),
    );
    assert_eq!(filled.unwrap().output, json!(10_000));
    let (count, bytes) = warm::idle();
    assert!(
        count >= 1 && bytes > 500 << 10,
        "{count} contexts, {bytes} bytes"
    );
    assert_eq!(counted(id, code, json!(0)), json!(10_000));
}
