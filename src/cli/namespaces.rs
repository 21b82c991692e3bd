//! `svc namespaces list|create|delete|tree`: a domain's namespaces (records of its
//! `namespaces` table) and the tree of tags below them (`GET /svc/namespaces/tree`).

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::output;
use super::records::delete_by_name;
use super::{NamespacesCommand, OutputFormat};
use crate::model::TreeFolder;
use crate::store::NAMESPACES;
use reqwest::Method;
use serde_json::{json, Value};
use std::io::Write;

pub fn run(client: &Client, format: OutputFormat, command: NamespacesCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        NamespacesCommand::List => {
            let namespaces: Vec<Value> = client.get("/svc/namespaces/all")?;
            output::rows(&mut out, format, &namespaces, "name")?;
        }
        NamespacesCommand::Create {
            name,
            path,
            description,
        } => {
            let mut body = json!({"name": name, "path": path});
            if let Some(description) = description {
                body["description"] = json!(description);
            }
            let record: Value = client.call(Method::POST, "/svc/namespaces", &body)?;
            output::object(&mut out, format, &record)?;
        }
        NamespacesCommand::Delete { namespace } => {
            delete_by_name(client, format, &mut out, NAMESPACES, &namespace)?;
        }
        NamespacesCommand::Tree { path, depth } => {
            let mut query = Vec::new();
            if let Some(path) = &path {
                query.push(format!("path={}", segment(path)));
            }
            if let Some(depth) = depth {
                query.push(format!("depth={depth}"));
            }
            let url = if query.is_empty() {
                "/svc/namespaces/tree".to_string()
            } else {
                format!("/svc/namespaces/tree?{}", query.join("&"))
            };
            let tree: Value = client.get(&url)?;
            match format {
                OutputFormat::Table => {
                    let tree: TreeFolder = serde_json::from_value(tree).map_err(|e| {
                        CliError::failed(format!("the server's tree is not understood: {e}"))
                    })?;
                    draw(&mut out, &tree, 0)?;
                }
                _ => output::object(&mut out, format, &tree)?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The tree as indented lines: folders end with `/`, tags show their last value and unit.
fn draw(out: &mut dyn Write, folder: &TreeFolder, level: usize) -> std::io::Result<()> {
    let indent = "  ".repeat(level);
    if level == 0 {
        let root = if folder.path.is_empty() {
            "/"
        } else {
            &folder.path
        };
        writeln!(out, "{root}")?;
    } else {
        let more = if folder.truncated { " …" } else { "" };
        writeln!(out, "{indent}{}/{more}", folder.name)?;
    }
    let inner = "  ".repeat(level + 1);
    for sub in &folder.folders {
        draw(out, sub, level + 1)?;
    }
    for tag in &folder.tags {
        let value = tag
            .value
            .as_ref()
            .map_or_else(|| "-".to_string(), |v| output::cell(v, 40));
        let unit = tag
            .unit
            .as_deref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default();
        let historized = if tag.historize { "  [historized]" } else { "" };
        writeln!(out, "{inner}{}  {value}{unit}{historized}", tag.name)?;
    }
    Ok(())
}
