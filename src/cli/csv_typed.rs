//! CSV with typed columns, so records survive a CSV export and import unchanged. A header is
//! `name` or `name:type` with type `string number boolean json`; an empty cell means the field
//! is absent. Untyped cells are inferred: a JSON number, `true`/`false`, else a string.
//! Export picks, per column, the narrowest type that holds every value exactly.

use serde_json::{Map, Number, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Inferred,
    String,
    Number,
    Boolean,
    Json,
}

impl ColumnType {
    fn suffix(self) -> &'static str {
        match self {
            ColumnType::Inferred => "",
            ColumnType::String => ":string",
            ColumnType::Number => ":number",
            ColumnType::Boolean => ":boolean",
            ColumnType::Json => ":json",
        }
    }
}

/// A parsed header cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
}

/// `name:type` → column; an unknown suffix is part of the name.
pub fn parse_header(cell: &str) -> Column {
    let cell = cell.trim();
    if let Some((name, ty)) = cell.rsplit_once(':') {
        let ty = match ty.to_ascii_lowercase().as_str() {
            "string" | "date" => Some(ColumnType::String),
            "number" => Some(ColumnType::Number),
            "boolean" | "bool" => Some(ColumnType::Boolean),
            "json" | "object" => Some(ColumnType::Json),
            _ => None,
        };
        if let (Some(ty), false) = (ty, name.is_empty()) {
            return Column {
                name: name.to_string(),
                ty,
            };
        }
    }
    Column {
        name: cell.to_string(),
        ty: ColumnType::Inferred,
    }
}

/// One cell's value; `None` = absent (empty cell).
pub fn parse_cell(col: &Column, cell: &str) -> Result<Option<Value>, String> {
    if cell.is_empty() {
        return Ok(None);
    }
    let value = match col.ty {
        ColumnType::String => Value::String(cell.to_string()),
        ColumnType::Number => Value::Number(
            cell.trim()
                .parse::<Number>()
                .map_err(|_| format!("column `{}`: `{cell}` is not a number", col.name))?,
        ),
        ColumnType::Boolean => match cell.trim().to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => {
                return Err(format!(
                    "column `{}`: `{cell}` is not true or false",
                    col.name
                ))
            }
        },
        ColumnType::Json => serde_json::from_str(cell)
            .map_err(|e| format!("column `{}`: invalid JSON `{cell}`: {e}", col.name))?,
        ColumnType::Inferred => match cell {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => cell
                .parse::<Number>()
                .map(Value::Number)
                .unwrap_or_else(|_| Value::String(cell.to_string())),
        },
    };
    Ok(Some(value))
}

/// A CSV row as a record.
pub fn parse_row(
    columns: &[Column],
    cells: &csv::StringRecord,
) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    for (col, cell) in columns.iter().zip(cells.iter()) {
        if let Some(v) = parse_cell(col, cell)? {
            map.insert(col.name.clone(), v);
        }
    }
    Ok(map)
}

/// Header cells (`name:type`) for records: keys in order of first appearance.
pub fn typed_columns(records: &[Value]) -> Vec<Column> {
    let mut columns: Vec<Column> = Vec::new();
    let mut kinds: Vec<Option<ColumnType>> = Vec::new();
    for record in records {
        let Value::Object(map) = record else { continue };
        for (k, v) in map {
            let i = match columns.iter().position(|c| &c.name == k) {
                Some(i) => i,
                None => {
                    columns.push(Column {
                        name: k.clone(),
                        ty: ColumnType::Json,
                    });
                    kinds.push(None);
                    columns.len() - 1
                }
            };
            let this = match v {
                Value::String(s) if !s.is_empty() => ColumnType::String,
                Value::Number(_) => ColumnType::Number,
                Value::Bool(_) => ColumnType::Boolean,
                _ => ColumnType::Json,
            };
            kinds[i] = Some(match kinds[i] {
                None => this,
                Some(prev) if prev == this => prev,
                Some(_) => ColumnType::Json,
            });
        }
    }
    for (col, kind) in columns.iter_mut().zip(kinds) {
        col.ty = kind.unwrap_or(ColumnType::Json);
    }
    columns
}

pub fn header_cell(col: &Column) -> String {
    format!("{}{}", col.name, col.ty.suffix())
}

/// A record's cells under `columns`.
pub fn row_cells(columns: &[Column], record: &Value) -> Vec<String> {
    columns
        .iter()
        .map(|col| match record.get(&col.name) {
            None => String::new(),
            Some(v) => match (col.ty, v) {
                (ColumnType::String | ColumnType::Inferred, Value::String(s)) => s.clone(),
                (_, Value::Number(n)) if col.ty != ColumnType::Json => n.to_string(),
                (_, Value::Bool(b)) if col.ty != ColumnType::Json => b.to_string(),
                (_, other) => other.to_string(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(records: &[Value]) -> Vec<Value> {
        let cols = typed_columns(records);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(cols.iter().map(header_cell)).unwrap();
        for r in records {
            w.write_record(row_cells(&cols, r)).unwrap();
        }
        let bytes = w.into_inner().unwrap();
        let mut rd = csv::Reader::from_reader(bytes.as_slice());
        let parsed: Vec<Column> = rd.headers().unwrap().iter().map(parse_header).collect();
        rd.records()
            .map(|r| Value::Object(parse_row(&parsed, &r.unwrap()).unwrap()))
            .collect()
    }

    #[test]
    fn records_round_trip() {
        let records = vec![
            json!({"id": "a", "code": "007", "price": 12.5, "n": 3, "ok": true, "tags": ["x", "y"], "note": ""}),
            json!({"id": "b", "code": "true", "price": -1e-7, "ok": false, "obj": {"k": null}, "mixed": 1}),
            json!({"id": "c", "note": "line\nbreak, \"quoted\"", "mixed": "one", "nul": null}),
            json!({"id": "d"}),
        ];
        assert_eq!(round_trip(&records), records);
    }

    #[test]
    fn column_types() {
        let cols = typed_columns(&[
            json!({"s": "x", "n": 1, "b": true, "e": "", "m": 1}),
            json!({"m": "x"}),
        ]);
        let header: Vec<String> = cols.iter().map(header_cell).collect();
        assert_eq!(
            header,
            ["b:boolean", "e:json", "m:json", "n:number", "s:string"]
        );
    }

    #[test]
    fn parse_typed_and_inferred_cells() {
        let c = |h: &str, v: &str| parse_cell(&parse_header(h), v);
        assert_eq!(c("a", "12").unwrap(), Some(json!(12)));
        assert_eq!(c("a", "1.5").unwrap(), Some(json!(1.5)));
        assert_eq!(c("a", "true").unwrap(), Some(json!(true)));
        assert_eq!(c("a", "Pump 1").unwrap(), Some(json!("Pump 1")));
        assert_eq!(c("a", "").unwrap(), None);
        assert_eq!(c("a:string", "007").unwrap(), Some(json!("007")));
        assert_eq!(c("a:number", " 7 ").unwrap(), Some(json!(7)));
        assert_eq!(c("a:json", "[1]").unwrap(), Some(json!([1])));
        assert_eq!(c("a:bool", "FALSE").unwrap(), Some(json!(false)));
        assert!(c("a:number", "x").unwrap_err().contains("not a number"));
        assert!(c("a:boolean", "yes").is_err());
        assert!(c("a:json", "{").is_err());
        assert_eq!(parse_header("time:zone").name, "time:zone");
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn cell_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            ".{0,8}".prop_map(Value::String),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |n| n.is_finite())
                .prop_map(|n| json!(n)),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
            prop::collection::vec("[a-z,\"]{0,3}", 0..3).prop_map(|v| json!(v)),
        ]
    }

    proptest! {
        /// Records written as typed CSV read back as the same records.
        #[test]
        fn records_survive_csv(
            rows in prop::collection::vec(
                prop::collection::btree_map("[a-z][a-z:_ ]{0,5}", cell_value(), 0..5), 0..6)
        ) {
            let records: Vec<Value> = rows
                .into_iter()
                .map(|row| Value::Object(row.into_iter().collect()))
                .collect();
            let cols = typed_columns(&records);
            for col in &cols {
                prop_assert_eq!(&parse_header(&header_cell(col)), col);
            }
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(cols.iter().map(header_cell)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for r in &records {
                w.write_record(row_cells(&cols, r)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let bytes = w.into_inner().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut rd = csv::ReaderBuilder::new().has_headers(!cols.is_empty()).from_reader(bytes.as_slice());
            let parsed: Vec<Column> = match cols.is_empty() {
                true => Vec::new(),
                false => rd.headers().map_err(|e| TestCaseError::fail(e.to_string()))?.iter().map(parse_header).collect(),
            };
            let back: Vec<Value> = rd
                .records()
                .map(|r| {
                    let r = r.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    parse_row(&parsed, &r).map(Value::Object).map_err(TestCaseError::fail)
                })
                .collect::<Result<_, _>>()?;
            if !cols.is_empty() {
                prop_assert_eq!(back, records);
            }
        }

        #[test]
        fn any_cell_never_panics(header in ".{0,12}", cell in ".{0,12}") {
            let _ = parse_cell(&parse_header(&header), &cell);
        }
    }
}
