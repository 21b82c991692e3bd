//! Tests of the JavaScript sandbox, against an in-memory fake host.

use super::*;
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A host over in-memory maps that records the calls it gets.
#[derive(Default)]
struct FakeHost {
    tags: RefCell<BTreeMap<String, Json>>,
    records: RefCell<Vec<Json>>,
    calls: RefCell<Vec<String>>,
}

impl Host for FakeHost {
    fn tag_read(&self, topic: &str) -> Result<Option<Json>, String> {
        self.calls.borrow_mut().push(format!("tag_read {topic}"));
        if topic == "forbidden" {
            return Err("no access to forbidden".into());
        }
        Ok(self.tags.borrow().get(topic).cloned())
    }

    fn tag_write(&self, topic: &str, value: &Json) -> Result<(), String> {
        self.calls.borrow_mut().push(format!("tag_write {topic}"));
        self.tags.borrow_mut().insert(topic.into(), value.clone());
        Ok(())
    }

    fn record_create(&self, table: &str, record: &Json) -> Result<Json, String> {
        self.calls
            .borrow_mut()
            .push(format!("record_create {table}"));
        let mut records = self.records.borrow_mut();
        let mut created = record.clone();
        created["id"] = json!(format!("{table}:{}", records.len() + 1));
        created["table"] = json!(table);
        records.push(created.clone());
        Ok(created)
    }

    fn record_get(&self, id: &str) -> Result<Option<Json>, String> {
        self.calls.borrow_mut().push(format!("record_get {id}"));
        Ok(self
            .records
            .borrow()
            .iter()
            .find(|r| r["id"] == id)
            .cloned())
    }

    fn record_list(&self, table: &str, query: &Json) -> Result<Json, String> {
        self.calls
            .borrow_mut()
            .push(format!("record_list {table} {query}"));
        let limit = query["limit"].as_u64().unwrap_or(u64::MAX) as usize;
        let status = query["filter[status][eq]"].as_str();
        let found: Vec<Json> = self
            .records
            .borrow()
            .iter()
            .filter(|r| r["table"] == table)
            .filter(|r| status.is_none_or(|s| r["status"] == s))
            .take(limit)
            .cloned()
            .collect();
        Ok(Json::Array(found))
    }
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_millis(1000),
        memory_bytes: 16 << 20,
    }
}

fn script(code: &str, input: Json) -> Result<Outcome, RunError> {
    run(
        &Source::script(code),
        &input,
        &limits(),
        &FakeHost::default(),
    )
}

fn output(code: &str, input: Json) -> Json {
    match script(code, input) {
        Ok(outcome) => outcome.output,
        Err(e) => panic!("{code}: {e}"),
    }
}

fn failure(result: Result<Outcome, RunError>) -> RunError {
    match result {
        Ok(outcome) => panic!("expected a failure, got {:?}", outcome.output),
        Err(e) => e,
    }
}

fn script_message(result: Result<Outcome, RunError>) -> String {
    match failure(result).failure {
        Failure::Script(message) => message,
        other => panic!("expected a script failure, got {other:?}"),
    }
}

#[test]
fn main_gets_the_input() {
    let code = "function main(i) { return i.x * 2 + 1 }";
    assert_eq!(output(code, json!({"x": 20})), json!(41));
    let code = "const main = (i) => i.x - 1;";
    assert_eq!(output(code, json!({"x": 20})), json!(19));
}

#[test]
fn completion_value_without_main() {
    assert_eq!(output("let a = 2; a * 21", json!(null)), json!(42));
    assert_eq!(
        output("input.name + '!'", json!({"name": "hi"})),
        json!("hi!")
    );
    assert_eq!(output("var x = 1;", json!(null)), json!(null));
}

#[test]
fn module_default_export() {
    let modules = BTreeMap::new();
    let run_module = |code: &str| {
        run(
            &Source::module(code, &modules),
            &json!({"n": 4}),
            &limits(),
            &FakeHost::default(),
        )
    };
    let code = "export default function (input) { return input.n * input.n }";
    assert_eq!(run_module(code).unwrap().output, json!(16));
    let code = "export default { fixed: true }";
    assert_eq!(run_module(code).unwrap().output, json!({"fixed": true}));
    let code = "const v = await Promise.resolve(3); export default (i) => v + i.n";
    assert_eq!(run_module(code).unwrap().output, json!(7));
    assert_eq!(
        run_module("export const x = 1").unwrap().output,
        json!(null)
    );
}

#[test]
fn bundle_imports_only_from_modules() {
    let mut modules = BTreeMap::new();
    modules.insert(
        "lib.js".to_string(),
        "export const twice = (x) => 2 * x;".to_string(),
    );
    modules.insert(
        "util/math.js".to_string(),
        "import { twice } from '../lib.js'; export const quad = (x) => twice(twice(x));"
            .to_string(),
    );
    let code = "import { twice } from './lib.js';\n\
                import { quad } from './util/math';\n\
                export default function (i) { return [twice(i), quad(i)] }";
    let source = Source::module(code, &modules);
    assert_eq!(check(&source), Ok(()));
    let outcome = run(&source, &json!(3), &limits(), &FakeHost::default()).unwrap();
    assert_eq!(outcome.output, json!([6, 12]));

    for import in ["os", "./missing.js", "../lib.js", "/etc/passwd", "std"] {
        let code = format!("import x from '{import}'; export default x;");
        let source = Source::module(&code, &modules);
        let message = script_message(run(&source, &json!(null), &limits(), &FakeHost::default()));
        assert!(message.contains("bundle"), "{import}: {message}");
    }
    let code = "async function main() { return (await import('fs')).readFileSync }";
    let message = script_message(script(code, json!(null)));
    assert!(message.contains("bundle"), "{message}");
}

#[test]
fn input_round_trips() {
    let input = json!({
        "nested": {"list": [1, 2.5, -3, "four", true, false, null, {"deep": []}]},
        "text": "héllo \"quoted\" \n line",
        "big": 9007199254740991u64,
        "empty": {}
    });
    assert_eq!(
        output("function main(i) { return i }", input.clone()),
        input
    );
    assert_eq!(output("input", input.clone()), input);
    assert_eq!(
        output("function main(i) { return i }", json!(null)),
        json!(null)
    );
    assert_eq!(
        output("function main(i) { return i }", json!("s")),
        json!("s")
    );
}

#[test]
fn logs_through_console_and_svc() {
    let code = r#"
        function main() {
            console.log("a", 1, {b: [true, null]}, undefined);
            console.info("info");
            console.warn("careful");
            console.error(new TypeError("bad"));
            svc.log("from svc", 10n);
            return 0;
        }"#;
    let outcome = script(code, json!(null)).unwrap();
    assert_eq!(
        outcome.logs,
        [
            r#"a 1 {"b":[true,null]} undefined"#,
            "info",
            "warn: careful",
            "error: TypeError: bad",
            "from svc 10",
        ]
    );
}

#[test]
fn logs_are_truncated() {
    let outcome = script(
        "for (let i = 0; i < 5000; i++) console.log(i); 1",
        json!(null),
    )
    .unwrap();
    assert_eq!(outcome.logs.len(), 1001);
    assert_eq!(outcome.logs[999], "999");
    assert_eq!(outcome.logs[1000], "… logs truncated");

    let outcome = script(
        "for (let i = 0; i < 100; i++) console.log('x'.repeat(1000)); 1",
        json!(null),
    )
    .unwrap();
    let total: usize = outcome.logs.iter().map(String::len).sum();
    assert!(total <= 64 * 1024 + 100, "{total}");
    assert_eq!(
        outcome.logs.last().map(String::as_str),
        Some("… logs truncated")
    );

    // Logs survive a failure.
    let error = failure(script(
        "console.log('before'); throw new Error('x')",
        json!(null),
    ));
    assert_eq!(error.logs, ["before"]);
}

#[test]
fn host_calls_reach_the_host() {
    let host = FakeHost::default();
    host.tags
        .borrow_mut()
        .insert("plant/temp".into(), json!(21.5));
    let code = r#"
        function main(input) {
            const t = svc.tag.read("plant/temp");
            const missing = svc.tag.read("plant/none");
            const w = svc.tag.write("plant/out", {v: t + 1});
            const a = svc.records.create("things", {status: "on", n: 1});
            svc.records.create("things", {status: "off", n: 2});
            svc.records.create("things", {status: "on", n: 3});
            const got = svc.records.get(a.id);
            const none = svc.records.get("things:99");
            const on = svc.records.list("things", {"filter[status][eq]": "on", limit: 5});
            const all = svc.records.list("things");
            let caught;
            try { svc.tag.read("forbidden") } catch (e) { caught = e instanceof Error && e.message }
            let typeErr;
            try { svc.tag.read(42) } catch (e) { typeErr = e.message }
            return {t, missing, w: w === undefined, id: a.id, got: got.n, none,
                    on: on.map(r => r.n), all: all.length, caught, typeErr};
        }"#;
    let outcome = run(&Source::script(code), &json!(null), &limits(), &host).unwrap();
    assert_eq!(
        outcome.output,
        json!({
            "t": 21.5, "missing": null, "w": true, "id": "things:1", "got": 1, "none": null,
            "on": [1, 3], "all": 3, "caught": "no access to forbidden",
            "typeErr": "svc.tag.read: topic must be a string"
        })
    );
    assert_eq!(host.tags.borrow()["plant/out"], json!({"v": 22.5}));
    let calls = host.calls.borrow();
    assert!(
        calls.contains(&r#"record_list things {"filter[status][eq]":"on","limit":5}"#.to_string())
    );
    assert!(calls.contains(&"record_list things {}".to_string()));

    // An uncaught host error fails the run with its message.
    let message = script_message(script("svc.tag.read('forbidden')", json!(null)));
    assert!(message.contains("no access to forbidden"), "{message}");
}

#[test]
fn endless_loop_times_out() {
    let limits = Limits {
        timeout: Duration::from_millis(100),
        memory_bytes: 16 << 20,
    };
    let host = FakeHost::default();
    for code in [
        "while (true) {}",
        "function main() { for (;;) { try { while (true) {} } catch (e) {} } }",
        "async function main() { while (true) { await null } }",
        "function main() { const spin = () => queueMicrotask(spin); spin(); return 1 }",
        "function main() { return new Promise(() => { while (true) {} }) }",
    ] {
        let started = Instant::now();
        let error = failure(run(&Source::script(code), &json!(null), &limits, &host));
        let took = started.elapsed();
        assert_eq!(error.failure, Failure::Timeout, "{code}");
        // About twice the limit at most (a little slack for a loaded test machine).
        assert!(took < Duration::from_millis(250), "{code}: {took:?}");
        assert_eq!(
            error.explain(&limits),
            "the function ran longer than its 100 ms time limit"
        );
        assert_eq!(
            error.to_string(),
            "the function ran longer than its time limit"
        );
    }
}

#[test]
fn allocation_bomb_hits_the_memory_limit() {
    let host = FakeHost::default();
    for code in [
        "let a = []; while (true) a.push(new Array(1e6).fill(1));",
        "let s = 'x'; while (true) s = (s + s).toUpperCase();",
        "const a = []; while (true) a.push(new Float64Array(1 << 16));",
        "function main() { const a = []; while (true) a.push({k: 'v' + a.length}); }",
        "async function main() { let a = []; while (true) { a.push(new Array(1e5).fill(0)); await null } }",
        "function main() { const grow = () => Promise.resolve().then(grow); grow(); return 1 }",
    ] {
        let error = failure(run(&Source::script(code), &json!(null), &limits(), &host));
        assert_eq!(error.failure, Failure::Memory, "{code}");
        assert_eq!(
            error.explain(&limits()),
            "the function exceeded its 16 MB memory limit"
        );
    }
    // The process is fine afterwards.
    assert_eq!(
        output("function main(i) { return i + 1 }", json!(1)),
        json!(2)
    );
}

#[test]
fn thrown_errors_are_script_failures() {
    let error = failure(script(
        "function main() {\n  throw new Error('boom');\n}",
        json!(null),
    ));
    assert!(matches!(&error.failure, Failure::Script(m) if m.starts_with("Error: boom")));
    assert!(
        error
            .to_string()
            .starts_with("the function failed: Error: boom"),
        "{error}"
    );
    assert_eq!(
        script_message(script("throw 'plain'", json!(null))),
        "plain"
    );
    assert_eq!(
        script_message(script("throw {code: 7}", json!(null))),
        r#"{"code":7}"#
    );
    let message = script_message(script("function f() { f() } f()", json!(null)));
    assert!(message.contains("stack"), "{message}");
    let message = script_message(script(
        "async function main() { throw new RangeError('late') }",
        json!(null),
    ));
    assert!(message.starts_with("RangeError: late"), "{message}");
    let message = script_message(script(
        "function main() { return new Promise(() => {}) }",
        json!(null),
    ));
    assert!(message.contains("never settled"), "{message}");
}

#[test]
fn syntax_errors() {
    let broken = Source::script("function main( { return 1 }");
    let message = check(&broken).unwrap_err();
    assert!(message.contains("SyntaxError"), "{message}");
    let run_message = script_message(run(&broken, &json!(null), &limits(), &FakeHost::default()));
    assert!(run_message.contains("SyntaxError"), "{run_message}");

    assert_eq!(
        check(&Source::script("function main(i) { return i }")),
        Ok(())
    );
    // Checking never runs the code.
    assert_eq!(check(&Source::script("while (true) {}")), Ok(()));
    // Script rules: no `export` in a script, `with` only in sloppy mode.
    assert!(check(&Source::script("export default 1")).is_err());
    assert_eq!(check(&Source::script("with ({}) {}")), Ok(()));
    assert!(check(&Source::script("'use strict'; with ({}) {}")).is_err());

    let modules = BTreeMap::from([("lib.js".to_string(), "export const = 1".to_string())]);
    let message = check(&Source::module("export default 1", &modules)).unwrap_err();
    assert!(message.starts_with("lib.js: SyntaxError"), "{message}");
    let empty = BTreeMap::new();
    assert!(check(&Source::module("export default (", &empty)).is_err());
    assert_eq!(
        check(&Source::module("export default await 1", &empty)),
        Ok(())
    );
}

#[test]
fn async_main_is_awaited() {
    let code = r#"
        async function main(i) {
            const a = await Promise.resolve(i.a);
            const b = await new Promise((resolve) => resolve(i.b));
            return a + b;
        }"#;
    assert_eq!(output(code, json!({"a": 1, "b": 2})), json!(3));
    // Un-awaited chains still finish.
    let host = FakeHost::default();
    let code =
        "function main() { Promise.resolve().then(() => svc.tag.write('late', 1)); return 0 }";
    run(&Source::script(code), &json!(null), &limits(), &host).unwrap();
    assert_eq!(host.tags.borrow()["late"], json!(1));
}

#[test]
fn unserialisable_results_fail() {
    for code in [
        "function main() { return 10n }",
        "function main() { return {n: 1n} }",
        "function main() { const a = {}; a.self = a; return a }",
        "function main() { return function () {} }",
        "function main() { return Symbol('s') }",
    ] {
        let message = script_message(script(code, json!(null)));
        assert!(
            message.contains("cannot be converted to JSON"),
            "{code}: {message}"
        );
    }
    assert_eq!(output("function main() {}", json!(1)), json!(null));
    assert_eq!(
        output("function main() { return [undefined, NaN] }", json!(1)),
        json!([null, null])
    );
}

#[test]
fn sandbox_has_no_outside_world() {
    let code = "[typeof require, typeof process, typeof setTimeout, typeof fetch, typeof std, \
                typeof os, typeof performance, typeof print, typeof Deno]";
    assert_eq!(output(code, json!(null)), Json::from(vec!["undefined"; 9]));
    // Runs do not share state.
    assert_eq!(output("globalThis.leak = 1; 0", json!(null)), json!(0));
    assert_eq!(output("typeof leak", json!(null)), json!("undefined"));
}

#[test]
fn cost_of_a_trivial_run() {
    let source = Source::script("function main(i) { return i.x + 1 }");
    let host = FakeHost::default();
    let started = Instant::now();
    for n in 0..1000 {
        let outcome = run(&source, &json!({"x": n}), &limits(), &host).unwrap();
        assert_eq!(outcome.output, json!(n + 1));
    }
    eprintln!("one trivial run: {:?}", started.elapsed() / 1000);
}

#[test]
fn no_state_survives_between_runs_on_a_kept_runtime() {
    // Many runs, so that most reuse a runtime an earlier run used.
    for i in 0..20 {
        let seen = output(
            "function main(i) {
                const proto = Object.getPrototypeOf(svc.log);
                const before = [typeof globalThis.leak, typeof proto.leak, typeof Function.prototype.leak];
                globalThis.leak = i; proto.leak = i; Function.prototype.leak = i;
                Object.prototype.polluted = i;
                return {before, own: proto === Function.prototype, polluted: typeof ({}).polluted};
            }",
            json!(i),
        );
        assert_eq!(
            seen,
            json!({"before": ["undefined", "undefined", "undefined"], "own": true, "polluted": "number"}),
            "run {i}"
        );
    }
    // A run that hit a limit leaves nothing behind either.
    let host = FakeHost::default();
    let limits = Limits {
        timeout: Duration::from_millis(50),
        memory_bytes: 16 << 20,
    };
    let stuck = "function main() { globalThis.x = 1; const spin = () => queueMicrotask(spin); spin(); return 1 }";
    let error = failure(run(&Source::script(stuck), &json!(null), &limits, &host));
    assert_eq!(error.failure, Failure::Timeout);
    assert_eq!(output("typeof x", json!(null)), json!("undefined"));
}
