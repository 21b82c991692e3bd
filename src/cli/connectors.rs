//! `svc connectors list|create|update|delete|status|test|browse|certificates|trust|reject`: a
//! domain's device connectors (records of its `connectors` table, the password write-only),
//! their status with every point, the test of a connector file before it is saved, one level
//! of a connector's OPC UA address space, and the server certificates waiting to be trusted.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::output;
use super::records::{delete_by_name, id_by_name, read_object};
use super::{ConnectorsCommand, OutputFormat};
use crate::store::CONNECTORS;
use reqwest::Method;
use serde_json::Value;
use std::io::Write;

pub fn run(client: &Client, format: OutputFormat, command: ConnectorsCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        ConnectorsCommand::List => {
            let connectors: Vec<Value> = client.get("/svc/connectors/all")?;
            output::rows(&mut out, format, &connectors, "name")?;
        }
        ConnectorsCommand::Create { file } => {
            let body = read_object(&file)?;
            let record: Value = client.call(Method::POST, "/svc/connectors", &body)?;
            output::object(&mut out, format, &record)?;
        }
        ConnectorsCommand::Update { connector, file } => {
            let id = id_by_name(client, CONNECTORS, &connector)?;
            let body = read_object(&file)?;
            let record: Value =
                client.call(Method::PUT, &format!("/svc/{}", segment(&id)), &body)?;
            output::object(&mut out, format, &record)?;
        }
        ConnectorsCommand::Delete { connector } => {
            delete_by_name(client, format, &mut out, CONNECTORS, &connector)?;
        }
        ConnectorsCommand::Status { connector } => match connector {
            Some(connector) => {
                let id = id_by_name(client, CONNECTORS, &connector)?;
                let status: Value =
                    client.get(&format!("/svc/connectors/{}/status", segment(&id)))?;
                output::object(&mut out, format, &status)?;
            }
            None => {
                let statuses: Vec<Value> = client.get("/svc/connectors/status")?;
                output::rows(&mut out, format, &statuses, "name")?;
            }
        },
        ConnectorsCommand::Test { connector, file } => {
            let answer: Value = match (connector, file) {
                (_, Some(file)) => {
                    client.call(Method::POST, "/svc/connectors/test", &read_object(&file)?)?
                }
                (Some(connector), None) => {
                    let id = id_by_name(client, CONNECTORS, &connector)?;
                    let path = format!("/svc/connectors/{}/test", segment(&id));
                    client.json(client.request(Method::POST, &path))?
                }
                (None, None) => {
                    return Err(CliError::usage("name a connector to test, or give --file"))
                }
            };
            match format {
                OutputFormat::Table => writeln!(
                    out,
                    "reached in {} ms: {}",
                    answer["latency_ms"], answer["device"]
                )?,
                _ => output::object(&mut out, format, &answer)?,
            }
        }
        ConnectorsCommand::Browse { connector, node } => {
            let id = id_by_name(client, CONNECTORS, &connector)?;
            let mut path = format!("/svc/connectors/{}/browse", segment(&id));
            if let Some(node) = node {
                let query: String = form_urlencoded::Serializer::new(String::new())
                    .append_pair("node", &node)
                    .finish();
                path = format!("{path}?{query}");
            }
            let children: Vec<Value> = client.get(&path)?;
            output::rows(&mut out, format, &children, "node_id")?;
        }
        ConnectorsCommand::Certificates => {
            let listed: Vec<Value> = client.get("/svc/connectors/certificates")?;
            output::rows(&mut out, format, &listed, "thumbprint")?;
        }
        ConnectorsCommand::Trust { thumbprint } => {
            judge(client, format, &mut out, &thumbprint, "trust")?
        }
        ConnectorsCommand::Reject { thumbprint } => {
            judge(client, format, &mut out, &thumbprint, "reject")?
        }
    }
    out.flush()?;
    Ok(())
}

/// `POST /svc/connectors/certificates/{thumbprint}/trust|reject`.
fn judge(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    thumbprint: &str,
    how: &str,
) -> CliResult<()> {
    let path = format!("/svc/connectors/certificates/{}/{how}", segment(thumbprint));
    let answer: Value = client.json(client.request(Method::POST, &path))?;
    output::object(out, format, &answer)?;
    Ok(())
}
