//! `svc keys create|list|revoke`: the calling user's API keys (`/auth/keys`).

use super::client::{segment, Client};
use super::error::CliResult;
use super::output;
use super::{KeysCommand, OutputFormat};
use crate::model::{ApiKeyInfo, NewApiKey, NewApiKeyRequest, Success};
use reqwest::Method;
use serde_json::{json, Value};
use std::io::Write;

pub fn run(client: &Client, format: OutputFormat, command: KeysCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        KeysCommand::Create { name } => {
            let key: NewApiKey =
                client.call(Method::POST, "/auth/keys", &NewApiKeyRequest { name })?;
            match format {
                OutputFormat::Table => writeln!(out, "{}", key.key)?,
                _ => output::object(&mut out, format, &to_value(&key))?,
            }
            out.flush()?;
            eprintln!(
                "API key `{}` created (id {}). Store it now: it will not be shown again.",
                key.name, key.id
            );
        }
        KeysCommand::List => {
            let keys: Vec<ApiKeyInfo> = client.get("/auth/keys")?;
            let rows: Vec<Value> = keys.iter().map(to_value).collect();
            output::rows(&mut out, format, &rows, "id")?;
        }
        KeysCommand::Revoke { id } => {
            let _: Success = client
                .json(client.request(Method::DELETE, &format!("/auth/keys/{}", segment(&id))))?;
            match format {
                OutputFormat::Table => writeln!(out, "revoked {id}")?,
                _ => output::object(&mut out, format, &json!({"success": true, "id": id}))?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
