//! One run of a function as the SDK's process model has it: its `inputs` resolved by name
//! (a tag's last value, the rows of a read-only SQL query) and handed to the code with its
//! read-only `config`, the sandbox run, then its `outputs` applied (a tag write of the output
//! or of one of its members; a record created or updated from an `sql` output's INSERT or
//! UPDATE, checked as the REST routes check it). The inputs and the code run outside async code
//! (on the thread of the run); the outputs are applied in async code after it.

use super::functions::Deployment;
use super::host::ServerHost;
use crate::functions::engine::{Failure, Host, Outcome, RunError};
use crate::functions::sdk::{config_of, InputKind, OutputKind};
use crate::functions::sql_output::{self, SqlWrite};
use crate::functions::FunctionDef;
use serde_json::{Map, Value};

fn script_failure(message: String, logs: Vec<String>) -> RunError {
    RunError {
        failure: Failure::Script(message),
        logs,
    }
}

/// Resolves the inputs and runs the code. A failure to resolve an input fails the run.
pub fn run_code(
    deployment: &Deployment,
    input: &Value,
    host: &ServerHost,
) -> super::functions::RunResult {
    let def = &deployment.def;
    let inputs = resolve_inputs(def, host).map_err(|e| script_failure(e, Vec::new()))?;
    let globals = [("config", config_of(def)), ("inputs", inputs)];
    def.run(&deployment.instance, input, &globals, host)
}

/// Applies the outputs of a run that succeeded; a failure to apply one fails the run, with the
/// logs the code wrote.
pub async fn apply_outputs(
    def: &FunctionDef,
    outcome: Outcome,
    host: &ServerHost,
) -> super::functions::RunResult {
    match write_outputs(def, &outcome.output, host).await {
        Ok(()) => Ok(outcome),
        Err(e) => Err(script_failure(e, outcome.logs)),
    }
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

async fn write_outputs(def: &FunctionDef, output: &Value, host: &ServerHost) -> Result<(), String> {
    for (i, out) in def.outputs.iter().enumerate() {
        match out.kind {
            OutputKind::TagWrite => {
                let tag = out.config.tag.as_deref().unwrap_or_default();
                let value = match &out.config.field {
                    Some(field) => output.get(field).cloned().unwrap_or(Value::Null),
                    None => output.clone(),
                };
                host.write_tag(tag, &value)
                    .await
                    .map_err(|e| format!("output {i} (tag_write `{tag}`): {e}"))?;
            }
            OutputKind::Sql => {
                let query = out.config.query.as_deref().unwrap_or_default();
                let failed = |e: String| format!("output {i} (sql): {e}");
                match sql_output::parse(query).map_err(failed)? {
                    SqlWrite::Insert { table, columns } => {
                        let fields = sql_output::bind(&columns, output).map_err(failed)?;
                        host.create_record(&table, &Value::Object(fields))
                            .await
                            .map_err(failed)?;
                    }
                    SqlWrite::Update { table, sets, id } => {
                        let fields = sql_output::bind(&sets, output).map_err(failed)?;
                        let id = id.value(output).map_err(failed)?;
                        host.update_record(&table, &id, fields)
                            .await
                            .map_err(failed)?;
                    }
                }
            }
        }
    }
    Ok(())
}
