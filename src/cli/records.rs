//! `svc records list|get|create|update|delete|count`: the generic record routes under `/svc`,
//! with filters from [`super::filters`] and record bodies from `--data JSON|@file|-`.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::filters;
use super::output;
use super::{OutputFormat, RecordsCommand};
use crate::model::{CountResponse, Success};
use reqwest::Method;
use serde_json::{json, Map, Value};
use std::io::{Read, Write};

pub fn run(client: &Client, format: OutputFormat, command: RecordsCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        RecordsCommand::List {
            table,
            list,
            limit,
            offset,
        } => {
            let mut pairs = filters::list_pairs(&list)?;
            if let Some(l) = limit {
                pairs.push(("limit".into(), l.to_string()));
            }
            if let Some(o) = offset {
                pairs.push(("offset".into(), o.to_string()));
            }
            let records: Vec<Value> =
                client.get_query(&format!("/svc/{}/all", segment(&table)), &pairs)?;
            output::rows(&mut out, format, &records, "value")?;
        }
        RecordsCommand::Get { id } => {
            let record: Value = client.get(&format!("/svc/{}", segment(&id)))?;
            output::object(&mut out, format, &record)?;
        }
        RecordsCommand::Create { table, data } => {
            let body = read_data(&data)?;
            let record: Value =
                client.call(Method::POST, &format!("/svc/{}", segment(&table)), &body)?;
            output::object(&mut out, format, &record)?;
        }
        RecordsCommand::Update { id, data } => {
            let body = read_data(&data)?;
            let record: Value =
                client.call(Method::PUT, &format!("/svc/{}", segment(&id)), &body)?;
            output::object(&mut out, format, &record)?;
        }
        RecordsCommand::Delete { id } => {
            let _: Success =
                client.json(client.request(Method::DELETE, &format!("/svc/{}", segment(&id))))?;
            match format {
                OutputFormat::Table => writeln!(out, "deleted {id}")?,
                _ => output::object(&mut out, format, &json!({"success": true, "id": id}))?,
            }
        }
        RecordsCommand::Count {
            table,
            filters: f,
            or_filters,
        } => {
            let pairs = filters::filter_pairs(&f, &or_filters)?;
            let count: CountResponse =
                client.get_query(&format!("/svc/{}/count", segment(&table)), &pairs)?;
            match format {
                OutputFormat::Table => writeln!(out, "{}", count.count)?,
                _ => output::object(&mut out, format, &json!({"count": count.count}))?,
            }
        }
        RecordsCommand::Import(args) => return super::import::run(client, format, &args),
        RecordsCommand::Export {
            table,
            list,
            page_size,
        } => return super::export::run(client, format, &table, &list, page_size),
    }
    out.flush()?;
    Ok(())
}

/// `--data`: inline JSON, `@file`, or `-` for stdin; must be a JSON object.
pub fn read_data(data: &str) -> CliResult<Value> {
    let (text, source) = match data.strip_prefix('@') {
        Some(path) => read_file_or_stdin(path)?,
        None if data == "-" => read_file_or_stdin(data)?,
        None => (data.to_string(), "--data".to_string()),
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("{source} is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(CliError::usage(format!("{source} must be a JSON object")));
    }
    Ok(value)
}

/// The text of a file (`-`: standard input) and how to name it in messages.
pub fn read_file_or_stdin(path: &str) -> CliResult<(String, String)> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::failed(format!("cannot read standard input: {e}")))?;
        return Ok((text, "standard input".to_string()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::failed(format!("cannot read `{path}`: {e}")))?;
    Ok((text, format!("`{path}`")))
}

/// The record id of a record of `table` given by its id (`<domain>.<table>:<key>`) or by the
/// value of its `name` field.
pub fn id_by_name(client: &Client, table: &str, name_or_id: &str) -> CliResult<String> {
    if name_or_id.contains(&format!(".{table}:")) {
        return Ok(name_or_id.to_string());
    }
    let records: Vec<Value> = client.get(&format!("/svc/{table}/all"))?;
    records
        .iter()
        .find(|r| r["name"] == name_or_id)
        .and_then(|r| r["id"].as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            CliError::failed(format!(
                "no {table} record named `{name_or_id}` in the domain"
            ))
        })
}

/// Deletes the record of `table` given by name or id, and says so.
pub fn delete_by_name(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    table: &str,
    name_or_id: &str,
) -> CliResult<()> {
    let id = id_by_name(client, table, name_or_id)?;
    let _: Success =
        client.json(client.request(Method::DELETE, &format!("/svc/{}", segment(&id))))?;
    match format {
        OutputFormat::Table => writeln!(out, "deleted {name_or_id} from {table}")?,
        _ => output::object(out, format, &json!({"success": true, "id": id}))?,
    }
    Ok(())
}

/// A JSON object read from a file (`-`: standard input).
pub fn read_object(path: &str) -> CliResult<Map<String, Value>> {
    let (text, source) = read_file_or_stdin(path)?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(CliError::usage(format!("{source} must hold a JSON object"))),
        Err(e) => Err(CliError::usage(format!("{source} is not valid JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_inline_file_and_errors() {
        assert_eq!(read_data("{\"a\":1}").unwrap(), json!({"a": 1}));
        assert_eq!(read_data("{bad").unwrap_err().exit_code(), 2);
        assert_eq!(read_data("[1]").unwrap_err().exit_code(), 2);
        assert_eq!(
            read_data("@/nonexistent/x.json").unwrap_err().exit_code(),
            1
        );
        let path = std::env::temp_dir().join(format!("svc-data-{}.json", std::process::id()));
        std::fs::write(&path, "{\"b\": [1]}").unwrap();
        assert_eq!(
            read_data(&format!("@{}", path.display())).unwrap(),
            json!({"b": [1]})
        );
        std::fs::remove_file(path).unwrap();
    }
}
