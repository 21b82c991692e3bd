//! Tag payloads as the monitor sees them: JSON when the bytes parse as JSON, text when they are
//! UTF-8, binary otherwise; with the one-line and pretty renderings the tree and the detail pane
//! show, and the number a sparkline plots.

use serde_json::Value;

/// A decoded MQTT payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Json(Value),
    Text(String),
    Binary(Vec<u8>),
}

impl Payload {
    /// Decodes raw bytes: JSON first, then UTF-8 text, then binary.
    pub fn parse(bytes: &[u8]) -> Payload {
        match std::str::from_utf8(bytes) {
            Ok(text) => match serde_json::from_str::<Value>(text) {
                Ok(value) => Payload::Json(value),
                Err(_) => Payload::Text(text.to_string()),
            },
            Err(_) => Payload::Binary(bytes.to_vec()),
        }
    }

    /// The number a sparkline plots: a JSON number, a boolean as 0/1, or the numeric `value`
    /// member of an object (the historian's convention).
    pub fn number(&self) -> Option<f64> {
        match self {
            Payload::Json(value) => json_number(value),
            Payload::Text(_) | Payload::Binary(_) => None,
        }
    }

    /// A short name of the payload's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::Json(Value::Null) => "json null",
            Payload::Json(Value::Bool(_)) => "json bool",
            Payload::Json(Value::Number(_)) => "json number",
            Payload::Json(Value::String(_)) => "json string",
            Payload::Json(Value::Array(_)) => "json array",
            Payload::Json(Value::Object(_)) => "json object",
            Payload::Text(_) => "text",
            Payload::Binary(_) => "binary",
        }
    }

    /// One line, at most `max` characters (an ellipsis marks a cut), with control characters
    /// replaced so the terminal never receives them.
    pub fn one_line(&self, max: usize) -> String {
        let full = match self {
            Payload::Json(value) => value.to_string(),
            Payload::Text(text) => text.clone(),
            Payload::Binary(bytes) => binary_preview(bytes, max),
        };
        truncate(&sanitize(&full), max)
    }

    /// The full payload for the detail pane: pretty JSON, the text, or a hex dump.
    pub fn pretty(&self) -> String {
        match self {
            Payload::Json(value) => serde_json::to_string_pretty(value)
                .unwrap_or_else(|_| value.to_string())
                .lines()
                .map(sanitize)
                .collect::<Vec<_>>()
                .join("\n"),
            Payload::Text(text) => text.lines().map(sanitize).collect::<Vec<_>>().join("\n"),
            Payload::Binary(bytes) => hex_dump(bytes),
        }
    }
}

fn json_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Object(map) => match map.get("value") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::Bool(b)) => Some(f64::from(u8::from(*b))),
            _ => None,
        },
        _ => None,
    }
    .filter(|n| n.is_finite())
}

/// Replaces control characters (including newlines and escapes) with visible stand-ins.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\r' => '⏎',
            '\t' => ' ',
            c if c.is_control() => '�',
            c => c,
        })
        .collect()
}

/// Cuts `text` to at most `max` characters, ending with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

fn binary_preview(bytes: &[u8], max: usize) -> String {
    let mut out = format!("<binary {} B>", bytes.len());
    for byte in bytes.iter().take(max / 3 + 1) {
        out.push_str(&format!(" {byte:02x}"));
    }
    out
}

/// Classic 16-bytes-a-line hex dump with an ASCII column, capped at 4 KiB of input.
fn hex_dump(bytes: &[u8]) -> String {
    const CAP: usize = 4096;
    let mut out = format!("binary payload, {} bytes", bytes.len());
    for (i, chunk) in bytes[..bytes.len().min(CAP)].chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!("\n{:08x}  {:<47}  {ascii}", i * 16, hex.join(" ")));
    }
    if bytes.len() > CAP {
        out.push_str(&format!("\n… {} more bytes", bytes.len() - CAP));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_json_text_and_binary() {
        assert_eq!(Payload::parse(b"21.5"), Payload::Json(json!(21.5)));
        assert_eq!(
            Payload::parse(br#"{"value":3}"#),
            Payload::Json(json!({"value": 3}))
        );
        assert_eq!(Payload::parse(b"hello"), Payload::Text("hello".into()));
        assert_eq!(
            Payload::parse(&[0xff, 0x00, 0x12]),
            Payload::Binary(vec![0xff, 0x00, 0x12])
        );
    }

    #[test]
    fn numbers_for_sparklines() {
        assert_eq!(Payload::parse(b"7").number(), Some(7.0));
        assert_eq!(Payload::parse(b"true").number(), Some(1.0));
        assert_eq!(Payload::parse(br#"{"value":2.5}"#).number(), Some(2.5));
        assert_eq!(Payload::parse(br#"{"v":2.5}"#).number(), None);
        assert_eq!(Payload::parse(b"\"7\"").number(), None);
        assert_eq!(Payload::parse(b"abc").number(), None);
        assert_eq!(Payload::parse(&[0xff]).number(), None);
    }

    #[test]
    fn one_line_is_truncated_and_sanitized() {
        let p = Payload::parse(br#"{"a":1,"b":"xxxxxxxxxxxxxxxxxxxx"}"#);
        let line = p.one_line(12);
        assert_eq!(line.chars().count(), 12);
        assert!(line.ends_with('…'), "{line}");
        assert_eq!(Payload::parse(b"a\nb\x1b[31m").one_line(40), "a⏎b�[31m");
        let bin = Payload::parse(&[0xde, 0xad, 0xbe, 0xef]).one_line(40);
        assert!(bin.starts_with("<binary 4 B> de ad be ef"), "{bin}");
    }

    #[test]
    fn pretty_forms() {
        let p = Payload::parse(br#"{"a":1}"#);
        assert_eq!(p.pretty(), "{\n  \"a\": 1\n}");
        let dump = Payload::parse(&[0x41, 0xff]).pretty();
        assert!(dump.contains("00000000  41 ff"), "{dump}");
        assert!(dump.contains("A."), "{dump}");
    }
}
