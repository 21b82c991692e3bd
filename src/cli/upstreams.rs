//! `svc upstreams list|create|update|delete|connect|disconnect|status|test`: a domain's
//! upstream brokers (records of its `upstreams` table, the password write-only), their
//! connection switch and status, and the reachability test of a stored upstream or of an
//! upstream file before it is saved.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::output;
use super::records::{delete_by_name, id_by_name, read_object};
use super::{OutputFormat, UpstreamsCommand};
use crate::upstream::config::UPSTREAMS;
use reqwest::Method;
use serde_json::Value;
use std::io::Write;

pub fn run(client: &Client, format: OutputFormat, command: UpstreamsCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        UpstreamsCommand::List => {
            let upstreams: Vec<Value> = client.get("/svc/upstreams/all")?;
            output::rows(&mut out, format, &upstreams, "name")?;
        }
        UpstreamsCommand::Create { file } => {
            let body = read_object(&file)?;
            let record: Value = client.call(Method::POST, "/svc/upstreams", &body)?;
            output::object(&mut out, format, &record)?;
        }
        UpstreamsCommand::Update { upstream, file } => {
            let id = id_by_name(client, UPSTREAMS, &upstream)?;
            let body = read_object(&file)?;
            let record: Value =
                client.call(Method::PUT, &format!("/svc/{}", segment(&id)), &body)?;
            output::object(&mut out, format, &record)?;
        }
        UpstreamsCommand::Delete { upstream } => {
            delete_by_name(client, format, &mut out, UPSTREAMS, &upstream)?;
        }
        UpstreamsCommand::Connect { upstream } => {
            switch(client, format, &mut out, &upstream, "connect")?;
        }
        UpstreamsCommand::Disconnect { upstream } => {
            switch(client, format, &mut out, &upstream, "disconnect")?;
        }
        UpstreamsCommand::Status { upstream } => match upstream {
            Some(upstream) => {
                let id = id_by_name(client, UPSTREAMS, &upstream)?;
                let status: Value =
                    client.get(&format!("/svc/upstreams/{}/status", segment(&id)))?;
                output::object(&mut out, format, &status)?;
            }
            None => {
                let statuses: Vec<Value> = client.get("/svc/upstreams/status")?;
                output::rows(&mut out, format, &statuses, "name")?;
            }
        },
        UpstreamsCommand::Test { upstream, file } => {
            let probe: Value = match (upstream, file) {
                (_, Some(file)) => {
                    client.call(Method::POST, "/svc/upstreams/test", &read_object(&file)?)?
                }
                (Some(upstream), None) => {
                    let id = id_by_name(client, UPSTREAMS, &upstream)?;
                    let path = format!("/svc/upstreams/{}/test", segment(&id));
                    client.json(client.request(Method::POST, &path))?
                }
                (None, None) => {
                    return Err(CliError::usage("name an upstream to test, or give --file"))
                }
            };
            match format {
                OutputFormat::Table => writeln!(
                    out,
                    "reached over {} in {} ms (session present: {})",
                    probe["protocol"].as_str().unwrap_or("?"),
                    probe["latency_ms"],
                    probe["session_present"]
                )?,
                _ => output::object(&mut out, format, &probe)?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// `POST /svc/upstreams/{id}/connect|disconnect`; prints the status it answers.
fn switch(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    upstream: &str,
    how: &str,
) -> CliResult<()> {
    let id = id_by_name(client, UPSTREAMS, upstream)?;
    let path = format!("/svc/upstreams/{}/{how}", segment(&id));
    let status: Value = client.json(client.request(Method::POST, &path))?;
    output::object(out, format, &status)?;
    Ok(())
}
