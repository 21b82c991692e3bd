//! User functions (the SDK calls them processes): what a function record holds, the rules it
//! must follow, and its triggers. The sandbox that runs the code is [`engine`]; the server
//! decides when a function runs and what its host API may touch.

pub mod engine;
mod instance;
pub mod python;
pub mod sdk;
pub mod sql_output;
pub mod typescript;
mod warm_pool;

use crate::schedule::Schedule;
pub use crate::store::{CodeVersion, RunRecord};
use crate::time::now_rfc3339;
use crate::topic::validate_topic_filter;
pub use instance::Instance;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Name of the per-domain system table holding functions.
pub const PROCESSES: &str = "processes";
/// Languages run in the QuickJS sandbox (TypeScript once its types are stripped).
pub const JAVASCRIPT: &str = "javascript";
pub const TYPESCRIPT: &str = "typescript";
/// Run by the system's `python3` in its own sandbox ([`python`]).
pub const PYTHON: &str = "python";
/// Bounds a function's own limits may take.
pub const MAX_TIMEOUT_MS: u64 = 300_000;
pub const MAX_MEMORY_MB: u64 = 1024;
/// Largest source (entry plus bundled modules) a function may carry.
pub const MAX_CODE_BYTES: usize = 1 << 20;
/// The RecordID of the user who created a function: set by svc when its record is created,
/// kept by every update, and no part of its definition.
pub const CREATED_BY: &str = "createdBy";
/// Fields of a function's record that are not its definition: those svc sets, and those the
/// SDK's shape adds when it reads one (`createdDt`, `domain_id`), which a body may carry back.
const NOT_DEFINITION: [&str; 6] = [
    "id",
    "created_dt",
    "updated_dt",
    CREATED_BY,
    "createdDt",
    "domain_id",
];

/// A function as stored in its domain's `processes` table (the record adds `id`,
/// `created_dt`, `updated_dt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default = "default_language")]
    pub language: String,
    pub code: String,
    /// Other files of an uploaded bundle, importable by the entry as ES modules.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modules: BTreeMap<String, String>,
    /// The code is an ES module whose default export is the function (`.mjs`, bundles).
    #[serde(default)]
    pub module: bool,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "first_version")]
    pub version: u64,
    #[serde(default)]
    pub triggers: Vec<Trigger>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
    /// Lets runs of this function overlap; by default they queue (events) or skip (timers).
    #[serde(default)]
    pub allow_overlap: bool,
    /// Whether runs are recorded in the run log (failures are counted either way).
    #[serde(default = "yes")]
    pub log_enabled: bool,
    /// Every run starts from fresh state: a new JavaScript context, a forked Python child.
    /// By default a process version keeps its runtime warm between runs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fresh_state: bool,
    /// Named values resolved before each run (`inputs.<name>` in the code).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<sdk::ProcessInput>,
    /// What a successful run's output becomes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<sdk::ProcessOutput>,
    /// With `values`, the read-only `config` object of the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<sdk::KeyEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<sdk::ValueEntry>,
    /// The JavaScript of a TypeScript function (never stored: made from `code` and `modules`
    /// whenever the record is read).
    #[serde(skip)]
    compiled: Option<Compiled>,
}

/// A TypeScript function's JavaScript: the entry and the bundle's modules, `.ts` files
/// renamed `.js` (imports may omit the extension).
#[derive(Debug, Clone, PartialEq, Default)]
struct Compiled {
    code: String,
    modules: BTreeMap<String, String>,
}

fn default_language() -> String {
    JAVASCRIPT.into()
}
fn yes() -> bool {
    true
}
fn is_false(value: &bool) -> bool {
    !*value
}
fn first_version() -> u64 {
    1
}
/// A function's (or function node's) time limit when it sets none.
pub fn default_timeout_ms() -> u64 {
    1000
}
/// A function's (or function node's) memory cap when it sets none.
pub fn default_memory_mb() -> u64 {
    32
}

/// Checks a time limit, a memory cap and a code size against the bounds every piece of user
/// code (function or flow function node) must keep.
pub fn check_limits(timeout_ms: u64, memory_mb: u64, code_bytes: usize) -> Result<(), String> {
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(format!("`timeout_ms` must be 1 to {MAX_TIMEOUT_MS}"));
    }
    if !(1..=MAX_MEMORY_MB).contains(&memory_mb) {
        return Err(format!("`memory_mb` must be 1 to {MAX_MEMORY_MB}"));
    }
    if code_bytes > MAX_CODE_BYTES {
        return Err(format!("the code is larger than {MAX_CODE_BYTES} bytes"));
    }
    Ok(())
}

/// The sandbox limits of a time limit in milliseconds and a memory cap in MiB.
pub fn limits(timeout_ms: u64, memory_mb: u64) -> engine::Limits {
    engine::Limits {
        timeout: std::time::Duration::from_millis(timeout_ms),
        memory_bytes: (memory_mb as usize) << 20,
    }
}

/// What starts a run. Read in svc's flat shape or the SDK's `{type, config}` (see
/// [`sdk::RawTrigger`]); stored in the flat one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "sdk::RawTrigger")]
pub enum Trigger {
    /// Run only when asked (`svc functions run`, the execute route).
    Manual,
    /// Callable through `POST /svc/processes/execute` by HTTP clients (and, with an
    /// `endpoint`, at `/svc/processes/http/<endpoint>`).
    Http {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
    },
    /// A publish on a topic matching `topic` (wildcards allowed); the payload is the input.
    TagChange { topic: String },
    /// Every `value` `unit`s.
    Interval { value: u64, unit: String },
    /// A cron pattern (5 fields, or 6 with seconds first), in UTC.
    Cron { expr: String },
}

impl Trigger {
    pub fn kind(&self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Http { .. } => "http",
            Trigger::TagChange { .. } => "tag_change",
            Trigger::Interval { .. } => "interval",
            Trigger::Cron { .. } => "cron",
        }
    }

    /// The timer of an interval or cron trigger.
    pub fn schedule(&self) -> Option<Result<Schedule, String>> {
        match self {
            Trigger::Interval { value, unit } => Some(Schedule::interval(*value, unit)),
            Trigger::Cron { expr } => Some(Schedule::cron(expr)),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), String> {
        match self {
            Trigger::TagChange { topic } => validate_topic_filter(topic)?,
            Trigger::Http {
                endpoint: Some(endpoint),
            } => crate::ids::check_name("endpoint", endpoint)?,
            _ => {}
        }
        match self.schedule() {
            Some(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

/// What `POST /svc/processes/execute` answers for a run that succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteResponse {
    pub success: bool,
    pub output: Value,
    pub logs: Vec<String>,
    pub duration_ms: u64,
}

/// Function names: what `POST /svc/code/:name` and the execute route address them by.
pub fn validate_name(name: &str) -> Result<(), String> {
    crate::ids::check_name("function", name)
}

/// Parses a trigger list as `PUT /svc/processes/triggers/:id` receives it.
pub fn parse_triggers(value: Value) -> Result<Vec<Trigger>, String> {
    let triggers: Vec<Trigger> =
        serde_json::from_value(value).map_err(|e| format!("invalid triggers: {e}"))?;
    for trigger in &triggers {
        trigger.validate()?;
    }
    Ok(triggers)
}

impl FunctionDef {
    /// This definition's code as the stored version `self.version`, stamped now.
    pub fn version_now(&self) -> CodeVersion {
        CodeVersion {
            version: self.version,
            language: self.language.clone(),
            module: self.module,
            code: self.code.clone(),
            modules: self.modules.clone(),
            created_dt: now_rfc3339(),
        }
    }

    /// Reads a function record's fields (defaults filled in) and checks every rule except the
    /// code's syntax, which the engine checks.
    pub fn from_fields(fields: &Map<String, Value>) -> Result<FunctionDef, String> {
        let mut fields = fields.clone();
        for system in NOT_DEFINITION {
            fields.remove(system);
        }
        let mut def: FunctionDef = serde_json::from_value(Value::Object(fields))
            .map_err(|e| format!("invalid function: {e}"))?;
        def.validate()?;
        if def.language == TYPESCRIPT {
            def.compiled = Some(def.compile()?);
        }
        Ok(def)
    }

    /// The JavaScript of a TypeScript function.
    fn compile(&self) -> Result<Compiled, String> {
        let code = typescript::to_javascript("main.ts", &self.code, self.module)?;
        let modules = self
            .modules
            .iter()
            .map(|(name, source)| match name.strip_suffix(".ts") {
                Some(stem) => Ok((
                    format!("{stem}.js"),
                    typescript::to_javascript(name, source, true)?,
                )),
                None => Ok((name.clone(), source.clone())),
            })
            .collect::<Result<_, String>>()?;
        Ok(Compiled { code, modules })
    }

    pub fn validate(&self) -> Result<(), String> {
        validate_name(&self.name)?;
        if ![JAVASCRIPT, TYPESCRIPT, PYTHON].contains(&self.language.as_str()) {
            return Err(format!(
                "language `{}` is not supported: use `{JAVASCRIPT}`, `{TYPESCRIPT}` or `{PYTHON}`",
                self.language
            ));
        }
        if self.language == PYTHON && (self.module || !self.modules.is_empty()) {
            return Err("a Python function is one file: no `module` or bundled modules".into());
        }
        let size = self.code.len() + self.modules.values().map(String::len).sum::<usize>();
        check_limits(self.timeout_ms, self.memory_mb, size)?;
        if !self.modules.is_empty() && !self.module {
            return Err("bundled modules need an ES-module entry (`module`: true)".into());
        }
        for trigger in &self.triggers {
            trigger.validate()?;
        }
        sdk::validate(self)
    }

    /// The fields to store: the definition, normalised.
    pub fn to_fields(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Whether `other` runs different code (a new version).
    pub fn code_differs(&self, other: &FunctionDef) -> bool {
        (&self.code, &self.modules, self.module, &self.language)
            != (&other.code, &other.modules, other.module, &other.language)
    }

    /// The HTTP endpoints its `http` triggers serve.
    pub fn endpoints(&self) -> impl Iterator<Item = &str> {
        self.triggers.iter().filter_map(|t| match t {
            Trigger::Http {
                endpoint: Some(endpoint),
            } => Some(endpoint.as_str()),
            _ => None,
        })
    }

    /// The JavaScript to run (a TypeScript function's compiled form).
    pub fn source(&self) -> engine::Source<'_> {
        let (code, modules) = match &self.compiled {
            Some(compiled) => (&compiled.code, &compiled.modules),
            None => (&self.code, &self.modules),
        };
        engine::Source {
            code,
            modules,
            module: self.module,
        }
    }

    pub fn limits(&self) -> engine::Limits {
        limits(self.timeout_ms, self.memory_mb)
    }

    /// Runs the code on `input` with read-only `globals`: Python in its sandbox, anything
    /// else in the JavaScript engine; in `instance`'s warm runtime unless the function asks
    /// for fresh state.
    pub fn run(
        &self,
        instance: &Instance,
        input: &Value,
        globals: &[(&str, Value)],
        host: &dyn engine::Host,
    ) -> Result<engine::Outcome, engine::RunError> {
        let limits = self.limits();
        let warm = (!self.fresh_state).then(|| instance.id());
        if self.language == PYTHON {
            python::run(warm, &self.code, input, globals, &limits, host)
        } else if self.fresh_state {
            engine::run_with_globals(&self.source(), input, globals, &limits, host)
        } else {
            engine::run_kept(instance.id(), &self.source(), input, globals, &limits, host)
        }
    }

    /// Compiles the code without running it; Err names the syntax error and where it is (or
    /// why Python cannot check it here).
    pub fn check_code(&self) -> Result<(), String> {
        let compiled = if self.language == PYTHON {
            python::check(&self.code)?
        } else {
            engine::check(&self.source())
        };
        compiled.map_err(|e| format!("the code does not compile: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn defaults_and_round_trip() {
        let def = FunctionDef::from_fields(&fields(json!({"name": "f", "code": "1"}))).unwrap();
        assert_eq!(
            (
                def.language.as_str(),
                def.enabled,
                def.version,
                def.timeout_ms,
                def.memory_mb
            ),
            ("javascript", true, 1, 1000, 32)
        );
        assert_eq!(FunctionDef::from_fields(&def.to_fields()).unwrap(), def);
    }

    #[test]
    fn rules() {
        let bad = [
            json!({"name": "a b", "code": "1"}),
            json!({"name": "f"}),
            json!({"name": "f", "code": "1", "language": "cobol"}),
            json!({"name": "f", "code": "1", "timeout_ms": 0}),
            json!({"name": "f", "code": "1", "memory_mb": 5000}),
            json!({"name": "f", "code": "1", "colour": "red"}),
            json!({"name": "f", "code": "1", "modules": {"a.js": "x"}}),
            json!({"name": "f", "code": "1", "triggers": [{"type": "tag_change", "topic": "a/#/b"}]}),
            json!({"name": "f", "code": "1", "triggers": [{"type": "interval", "value": 1, "unit": "ms"}]}),
            json!({"name": "f", "code": "1", "triggers": [{"type": "cron", "expr": "* * *"}]}),
            json!({"name": "f", "code": "1", "triggers": [{"type": "sometimes"}]}),
        ];
        for case in bad {
            assert!(
                FunctionDef::from_fields(&fields(case.clone())).is_err(),
                "{case}"
            );
        }
        let triggers = parse_triggers(json!([
            {"type": "manual"}, {"type": "http"},
            {"type": "tag_change", "topic": "plant/+/temp"},
            {"type": "interval", "value": 5, "unit": "s"},
            {"type": "cron", "expr": "*/5 * * * *"}
        ]))
        .unwrap();
        let kinds: Vec<_> = triggers.iter().map(Trigger::kind).collect();
        assert_eq!(kinds, ["manual", "http", "tag_change", "interval", "cron"]);
    }

    #[test]
    fn typescript_runs_as_its_javascript() {
        let def = FunctionDef::from_fields(&fields(json!({
            "name": "f", "language": "typescript",
            "code": "function main(input: {c: number}): number { return input.c * 2; }"
        })))
        .unwrap();
        assert!(def.source().code.contains("function main(input)"));
        assert_eq!(
            def.code,
            "function main(input: {c: number}): number { return input.c * 2; }"
        );
        let bundle = FunctionDef::from_fields(&fields(json!({
            "name": "f", "language": "typescript", "module": true,
            "code": "import { k } from './k';\nexport default (x: number) => x * k;",
            "modules": {"k.ts": "export const k: number = 3;"}
        })))
        .unwrap();
        assert!(bundle.source().modules.contains_key("k.js"));
        let broken = FunctionDef::from_fields(&fields(json!({
            "name": "f", "language": "typescript", "code": "let x: = 1"
        })));
        assert!(broken.unwrap_err().contains("line 1, column 8"));
    }

    #[test]
    fn new_code_is_a_new_version() {
        let a = FunctionDef::from_fields(&fields(json!({"name": "f", "code": "1"}))).unwrap();
        let mut b = a.clone();
        b.timeout_ms = 5;
        assert!(!a.code_differs(&b));
        b.code = "2".into();
        assert!(a.code_differs(&b));
    }
}
