//! Rendering answers on stdout as an aligned table, JSON, JSON lines or CSV. The format is
//! `--output`, else a table when stdout is a terminal and JSON when it is piped.

use super::OutputFormat;
use serde_json::{Map, Value};
use std::io::{self, IsTerminal, Write};

/// Longest cell of a table before it is cut with `…`.
const MAX_CELL: usize = 60;

pub fn resolve(chosen: Option<OutputFormat>) -> OutputFormat {
    chosen.unwrap_or(if io::stdout().is_terminal() {
        OutputFormat::Table
    } else {
        OutputFormat::Json
    })
}

/// Rows (objects or scalars) in the format. Scalars are shown as one column named `column`.
pub fn rows(
    out: &mut dyn Write,
    format: OutputFormat,
    rows: &[Value],
    column: &str,
) -> io::Result<()> {
    match format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, rows)?;
            writeln!(out)
        }
        OutputFormat::Jsonl => {
            for row in rows {
                serde_json::to_writer(&mut *out, row)?;
                writeln!(out)?;
            }
            Ok(())
        }
        // Nothing to say: no header line of no columns either.
        OutputFormat::Csv | OutputFormat::Table if rows.is_empty() => Ok(()),
        OutputFormat::Csv => {
            let (columns, cells) = grid(rows, column, usize::MAX);
            let mut w = csv::Writer::from_writer(out);
            w.write_record(&columns).map_err(csv_io)?;
            for row in cells {
                w.write_record(&row).map_err(csv_io)?;
            }
            w.flush()
        }
        OutputFormat::Table => {
            if rows.iter().all(|r| !r.is_object()) {
                for row in rows {
                    writeln!(out, "{}", cell(row, MAX_CELL * 4))?;
                }
                return Ok(());
            }
            let (columns, cells) = grid(rows, column, MAX_CELL);
            let upper: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
            table(out, &upper, &cells)
        }
    }
}

/// One object: a FIELD / VALUE table, or the object itself in the other formats.
pub fn object(out: &mut dyn Write, format: OutputFormat, value: &Value) -> io::Result<()> {
    match (format, value) {
        (OutputFormat::Json, v) => {
            serde_json::to_writer_pretty(&mut *out, v)?;
            writeln!(out)
        }
        (OutputFormat::Jsonl, v) => {
            serde_json::to_writer(&mut *out, v)?;
            writeln!(out)
        }
        (OutputFormat::Csv, v) => rows(out, format, std::slice::from_ref(v), "value"),
        (OutputFormat::Table, Value::Object(map)) => {
            let mut lines = Vec::new();
            flatten("", map, &mut lines);
            let cells: Vec<Vec<String>> = lines.into_iter().map(|(k, v)| vec![k, v]).collect();
            table(out, &["FIELD".into(), "VALUE".into()], &cells)
        }
        (OutputFormat::Table, v) => writeln!(out, "{}", cell(v, usize::MAX)),
    }
}

/// Nested objects as dotted keys, for the FIELD / VALUE table.
fn flatten(prefix: &str, map: &Map<String, Value>, lines: &mut Vec<(String, String)>) {
    for (k, v) in map {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if !inner.is_empty() => flatten(&key, inner, lines),
            _ => lines.push((key, cell(v, usize::MAX))),
        }
    }
}

/// Columns (keys in order of first appearance) and the cells of each row.
fn grid(rows: &[Value], column: &str, max: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let mut columns: Vec<String> = Vec::new();
    let mut scalar = false;
    for row in rows {
        match row {
            Value::Object(map) => {
                for k in map.keys() {
                    if !columns.contains(k) {
                        columns.push(k.clone());
                    }
                }
            }
            _ => scalar = true,
        }
    }
    // The id first and the server's timestamps last, as people read records.
    let rank = |c: &String| match c.as_str() {
        "id" => 0,
        "created_dt" => 2,
        "updated_dt" => 3,
        _ => 1,
    };
    columns.sort_by_key(rank);
    if scalar && !columns.iter().any(|c| c == column) {
        columns.insert(0, column.to_string());
    }
    let cells = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| match row {
                    Value::Object(map) => map.get(c).map_or(String::new(), |v| cell(v, max)),
                    other if c == column => cell(other, max),
                    _ => String::new(),
                })
                .collect()
        })
        .collect();
    (columns, cells)
}

/// A value as cell text: strings raw, null empty, the rest compact JSON; cut at `max` chars.
pub fn cell(value: &Value, max: usize) -> String {
    let text = match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = text.replace(['\n', '\r', '\t'], " ");
    match text.char_indices().nth(max) {
        Some((i, _)) if max > 0 => format!("{}…", &text[..i]),
        _ => text,
    }
}

fn table(out: &mut dyn Write, header: &[String], rows: &[Vec<String>]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: &[String]| -> io::Result<()> {
        let mut text = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(c);
            } else {
                text.push_str(c);
                text.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(out, header)?;
    for row in rows {
        line(out, row)?;
    }
    Ok(())
}

pub fn csv_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(format: OutputFormat, v: &[Value]) -> String {
        let mut buf = Vec::new();
        rows(&mut buf, format, v, "value").unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn table_aligns_union_of_columns() {
        let v = [
            json!({"id": "a", "n": 1}),
            json!({"id": "bbb", "tags": ["x"]}),
        ];
        let text = render(OutputFormat::Table, &v);
        assert_eq!(text, "ID   N  TAGS\na    1\nbbb     [\"x\"]\n");
        let v = [json!({"updated_dt": "u", "a": 1, "id": "x", "created_dt": "c"})];
        assert_eq!(
            render(OutputFormat::Csv, &v),
            "id,a,created_dt,updated_dt\nx,1,c,u\n"
        );
    }

    #[test]
    fn csv_and_jsonl() {
        let v = [json!({"a": "x,y", "b": null}), json!({"b": true})];
        assert_eq!(
            render(OutputFormat::Csv, &v),
            "a,b\n\"x,y\",\ntrue\n".replace("\ntrue", "\n,true")
        );
        assert_eq!(
            render(OutputFormat::Jsonl, &v),
            "{\"a\":\"x,y\",\"b\":null}\n{\"b\":true}\n"
        );
        let back: Vec<Value> = serde_json::from_str(&render(OutputFormat::Json, &v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn empty_lists() {
        assert_eq!(render(OutputFormat::Table, &[]), "");
        assert_eq!(render(OutputFormat::Csv, &[]), "");
        assert_eq!(render(OutputFormat::Json, &[]), "[]\n");
        assert_eq!(render(OutputFormat::Jsonl, &[]), "");
    }

    #[test]
    fn scalars_get_a_named_column() {
        let v = [json!("a/b"), json!("c")];
        assert_eq!(render(OutputFormat::Table, &v), "a/b\nc\n");
        let mut buf = Vec::new();
        rows(&mut buf, OutputFormat::Csv, &v, "path").unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "path\na/b\nc\n");
    }

    #[test]
    fn object_table_flattens() {
        let mut buf = Vec::new();
        object(
            &mut buf,
            OutputFormat::Table,
            &json!({"a": {"b": 1}, "c": "x"}),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "FIELD  VALUE\na.b    1\nc      x\n"
        );
    }

    #[test]
    fn long_cells_are_cut() {
        assert_eq!(cell(&json!("abcdef"), 3), "abc…");
        assert_eq!(cell(&json!("a\nb"), 10), "a b");
    }
}
