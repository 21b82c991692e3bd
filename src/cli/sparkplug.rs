//! `svc sparkplug list|create|update|delete|nodes`: a domain's Sparkplug B host applications
//! (records of its `sparkplug` table) and the edge nodes they know, with their devices, state,
//! sequence numbers and the rebirths asked of them.

use super::client::{segment, Client};
use super::error::CliResult;
use super::output;
use super::records::{delete_by_name, id_by_name, read_object};
use super::{OutputFormat, SparkplugCommand};
use crate::sparkplug::TABLE;
use reqwest::Method;
use serde_json::Value;
use std::io::Write;

pub fn run(client: &Client, format: OutputFormat, command: SparkplugCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        SparkplugCommand::List => {
            let hosts: Vec<Value> = client.get("/svc/sparkplug/all")?;
            output::rows(&mut out, format, &hosts, "name")?;
        }
        SparkplugCommand::Create { file } => {
            let record: Value =
                client.call(Method::POST, "/svc/sparkplug", &read_object(&file)?)?;
            output::object(&mut out, format, &record)?;
        }
        SparkplugCommand::Update { host, file } => {
            let id = id_by_name(client, TABLE, &host)?;
            let path = format!("/svc/{}", segment(&id));
            let record: Value = client.call(Method::PUT, &path, &read_object(&file)?)?;
            output::object(&mut out, format, &record)?;
        }
        SparkplugCommand::Delete { host } => {
            delete_by_name(client, format, &mut out, TABLE, &host)?;
        }
        SparkplugCommand::Nodes => {
            let nodes: Vec<Value> = client.get("/svc/sparkplug/nodes")?;
            output::rows(&mut out, format, &nodes, "node")?;
        }
    }
    out.flush()?;
    Ok(())
}
