//! `svc flows list|import|start|stop|run|logs`: flows (records of the `flows` table) imported
//! from JSON files, started and stopped by name, run by hand through `POST /svc/flows/execute`,
//! and their run log.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::functions::{list, parse_input, print_runs, record_id};
use super::output;
use super::records::read_file_or_stdin;
use super::{FlowsCommand, OutputFormat};
use reqwest::Method;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// Fields of a flow file that belong to the stored record, not to the flow.
const SERVER_FIELDS: [&str; 3] = ["id", "created_dt", "updated_dt"];

pub fn run(client: &Client, format: OutputFormat, command: FlowsCommand) -> CliResult<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match command {
        FlowsCommand::List => {
            let flows: Vec<Value> = client.get("/svc/flows/all")?;
            list(
                &mut out,
                format,
                &flows,
                &["name", "running", "nodes", "updated_dt"],
                |f| {
                    let nodes = f["nodes"]
                        .as_array()
                        .map_or(Value::Null, |n| n.len().into());
                    vec![
                        f["name"].clone(),
                        f["running"].clone(),
                        nodes,
                        f["updated_dt"].clone(),
                    ]
                },
            )?;
        }
        FlowsCommand::Import { file, start } => import(client, format, &mut out, &file, start)?,
        FlowsCommand::Start { name } => set_running(client, format, &mut out, &name, true)?,
        FlowsCommand::Stop { name } => set_running(client, format, &mut out, &name, false)?,
        FlowsCommand::Run { name, input, node } => {
            let mut body = json!({"name": name, "input": parse_input(input.as_deref())?});
            if let Some(node) = node {
                body["node"] = Value::String(node);
            }
            let resp: Value = client.call(Method::POST, "/svc/flows/execute", &body)?;
            match format {
                OutputFormat::Table => {
                    for entry in resp["debug"].as_array().into_iter().flatten() {
                        writeln!(out, "{entry}")?;
                    }
                    eprintln!(
                        "flow {name} ran in {} ms",
                        output::cell(&resp["duration_ms"], usize::MAX)
                    );
                }
                _ => output::object(&mut out, format, &resp)?,
            }
        }
        FlowsCommand::Logs { name, limit } => {
            let path = format!("/svc/flows/{}/runs", segment(&name));
            print_runs(client, &mut out, format, &path, limit)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Creates the flow of the file, or replaces the fields of the flow of that name.
fn import(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    file: &str,
    start: bool,
) -> CliResult<()> {
    let mut flow = read_flow(file)?;
    let name = flow["name"].as_str().unwrap_or_default().to_string();
    for field in SERVER_FIELDS {
        flow.remove(field);
    }
    let (mut record, verb) = match existing(client, &name)? {
        Some(id) => {
            let record: Value =
                client.call(Method::PUT, &format!("/svc/{}", segment(&id)), &flow)?;
            (record, "updated")
        }
        None => (client.call(Method::POST, "/svc/flows", &flow)?, "created"),
    };
    if start {
        let path = format!("/svc/flows/{}/start", segment(&name));
        record = client.json(client.request(Method::POST, &path))?;
    }
    match format {
        OutputFormat::Table => {
            let started = if start { " and started it" } else { "" };
            writeln!(out, "{verb} flow {name}{started}")?;
        }
        _ => output::object(out, format, &record)?,
    }
    Ok(())
}

/// The flow file (`-`: standard input): a JSON object with a name.
fn read_flow(file: &str) -> CliResult<Map<String, Value>> {
    let (text, source) = read_file_or_stdin(file)?;
    parse_flow(&text, &source)
}

fn parse_flow(text: &str, source: &str) -> CliResult<Map<String, Value>> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| CliError::usage(format!("{source} is not valid JSON: {e}")))?;
    let Value::Object(flow) = value else {
        return Err(CliError::usage(format!(
            "{source} must be a flow object {{\"name\", \"nodes\", …}}"
        )));
    };
    match flow.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => Ok(flow),
        _ => Err(CliError::usage(format!(
            "{source} must give the flow a \"name\""
        ))),
    }
}

/// The RecordID of the flow named `name`, if there is one.
fn existing(client: &Client, name: &str) -> CliResult<Option<String>> {
    let query = [("filter[name][eq][string]".to_string(), name.to_string())];
    let flows: Vec<Value> = client.get_query("/svc/flows/all", &query)?;
    flows
        .iter()
        .find(|f| f["name"].as_str() == Some(name))
        .map(record_id)
        .transpose()
}

fn set_running(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    name: &str,
    running: bool,
) -> CliResult<()> {
    let (action, done) = if running {
        ("start", "started")
    } else {
        ("stop", "stopped")
    };
    let path = format!("/svc/flows/{}/{action}", segment(name));
    let record: Value = client.json(client.request(Method::POST, &path))?;
    match format {
        OutputFormat::Table => writeln!(out, "{done} flow {name}")?,
        _ => output::object(out, format, &record)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_files() {
        let flow = parse_flow(r#"{"name": "f", "nodes": []}"#, "x").unwrap();
        assert_eq!(flow["name"], "f");
        for bad in ["{", "[1]", r#"{"nodes": []}"#, r#"{"name": " "}"#] {
            assert_eq!(parse_flow(bad, "x").unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
