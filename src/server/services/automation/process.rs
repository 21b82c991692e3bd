//! One run of a function as the SDK's process model has it: its `inputs` resolved by name
//! (a tag's last value, the rows of a read-only SQL query) and handed to the code with its
//! read-only `config`, the sandbox run, then its `outputs` applied (a tag write of the output
//! or of one of its members; a record created or updated from an `sql` output's INSERT or
//! UPDATE, checked as the REST routes check it). Runs on the thread of the run, outside async code.

use super::functions::Deployment;
use super::host::ServerHost;
use crate::functions::engine::{Failure, Host, RunError};
use crate::functions::sdk::{config_of, InputKind, OutputKind};
use crate::functions::sql_output::{self, SqlWrite};
use crate::functions::FunctionDef;
use serde_json::{Map, Value};

/// Resolves the inputs, runs the code, applies the outputs. A failure to resolve an input or
/// to apply an output fails the run, with the logs the code wrote.
pub fn run(
    deployment: &Deployment,
    input: &Value,
    host: &ServerHost,
) -> super::functions::RunResult {
    let def = &deployment.def;
    let script_failure = |message: String, logs: Vec<String>| RunError {
        failure: Failure::Script(message),
        logs,
    };
    let inputs = resolve_inputs(def, host).map_err(|e| script_failure(e, Vec::new()))?;
    let globals = [("config", config_of(def)), ("inputs", inputs)];
    let outcome = def.run(&deployment.instance, input, &globals, host)?;
    if let Err(e) = apply_outputs(def, &outcome.output, host) {
        return Err(script_failure(e, outcome.logs));
    }
    Ok(outcome)
}

fn resolve_inputs(def: &FunctionDef, host: &ServerHost) -> Result<Value, String> {
    let mut inputs = Map::new();
    for input in &def.inputs {
        let value = match input.kind {
            InputKind::Tag => {
                let tag = input.config.tag.as_deref().unwrap_or_default();
                host.tag_read(tag)
                    .map_err(|e| format!("input `{}`: {e}", input.name))?
                    .unwrap_or(Value::Null)
            }
            InputKind::Sql => {
                let query = input.config.query.as_deref().unwrap_or_default();
                host.sql_rows(query)
                    .map_err(|e| format!("input `{}`: {e}", input.name))?
            }
        };
        inputs.insert(input.name.clone(), value);
    }
    Ok(Value::Object(inputs))
}

fn apply_outputs(def: &FunctionDef, output: &Value, host: &ServerHost) -> Result<(), String> {
    for (i, out) in def.outputs.iter().enumerate() {
        match out.kind {
            OutputKind::TagWrite => {
                let tag = out.config.tag.as_deref().unwrap_or_default();
                let value = match &out.config.field {
                    Some(field) => output.get(field).cloned().unwrap_or(Value::Null),
                    None => output.clone(),
                };
                host.tag_write(tag, &value)
                    .map_err(|e| format!("output {i} (tag_write `{tag}`): {e}"))?;
            }
            OutputKind::Sql => {
                let query = out.config.query.as_deref().unwrap_or_default();
                let failed = |e: String| format!("output {i} (sql): {e}");
                match sql_output::parse(query).map_err(failed)? {
                    SqlWrite::Insert { table, columns } => {
                        let fields = sql_output::bind(&columns, output).map_err(failed)?;
                        host.record_create(&table, &Value::Object(fields))
                            .map_err(failed)?;
                    }
                    SqlWrite::Update { table, sets, id } => {
                        let fields = sql_output::bind(&sets, output).map_err(failed)?;
                        let id = id.value(output).map_err(failed)?;
                        host.record_update(&table, &id, fields).map_err(failed)?;
                    }
                }
            }
        }
    }
    Ok(())
}
