//! `svc alarms …`: a domain's alarm definitions (records of its `alarms` table, like `svc
//! sparkplug`), the alarms standing now, the journal with its filters, the alarm system's
//! health, the operator's actions (acknowledge, shelve, unshelve, out of service, in service),
//! and `watch`, which follows `GET /svc/alarms/stream` and prints one line per change.
//!
//! The command shapes live here rather than in `cli/mod.rs` so the alarm commands stay in one
//! file; states and priorities are checked by clap (exit 2 with the allowed values) because the
//! server's sentence for them could only come after a round trip.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::historian::parse_time;
use super::output;
use super::records::{delete_by_name, id_by_name, read_object};
use super::{non_empty, OutputFormat};
use crate::alarms::{StateName, TABLE};
use clap::Subcommand;
use reqwest::Method;
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

/// How long `watch` waits on the stream: it runs until stopped, but reqwest wants a bound
/// (the client's default of 300 s would cut a quiet stream).
const WATCH_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

const PRIORITIES: [&str; 4] = ["low", "medium", "high", "critical"];

fn priority() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(PRIORITIES)
}

fn state() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(StateName::ALL.map(StateName::as_str))
}

/// A shelve's length, checked here so a typo is a usage error (exit 2).
fn duration(text: &str) -> Result<String, String> {
    crate::duration::parse_duration(text)
        .map(|_| text.to_string())
        .map_err(|e| format!("{e} (use e.g. 30m, 2h, 1d)"))
}

#[derive(Debug, Subcommand)]
pub enum AlarmsCommand {
    /// List the domain's alarm definitions.
    List,
    /// Create an alarm definition from a JSON file (`-`: standard input), e.g.
    /// `{"name":"tank_high","tag":"acme/tank/level","kind":"high","setpoint":90,"priority":"high"}`.
    Create {
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Change an alarm definition (by name or record id) with the fields of a JSON file.
    Update {
        #[arg(value_parser = non_empty())]
        alarm: String,
        #[arg(long, short = 'f', value_parser = non_empty())]
        file: String,
    },
    /// Delete an alarm definition, by name or record id.
    Delete {
        #[arg(value_parser = non_empty())]
        alarm: String,
    },
    /// The alarms that are not normal now, most urgent first, then newest first.
    Active {
        /// Only this priority
        #[arg(long, value_parser = priority())]
        priority: Option<String>,
        /// Only this state
        #[arg(long, value_parser = state())]
        state: Option<String>,
    },
    /// The alarm journal, newest first: every state change and operator action.
    Journal {
        /// Only this alarm
        #[arg(long, value_parser = non_empty())]
        alarm: Option<String>,
        /// Only entries into this state
        #[arg(long, value_parser = state())]
        state: Option<String>,
        /// Only this priority
        #[arg(long, value_parser = priority())]
        priority: Option<String>,
        /// Only actions by this user
        #[arg(long, value_parser = non_empty())]
        who: Option<String>,
        /// From this time (RFC 3339, `now`, or relative like -1h), inclusive
        #[arg(long, allow_hyphen_values = true)]
        from: Option<String>,
        /// Until this time, exclusive
        #[arg(long, allow_hyphen_values = true)]
        to: Option<String>,
        /// Only entries older than this journal id (to page back)
        #[arg(long)]
        before: Option<i64>,
        /// At most this many entries [default: the server's, 100]
        #[arg(long, short = 'l', value_parser = clap::value_parser!(u64).range(1..=10_000))]
        limit: Option<u64>,
    },
    /// The alarm system's health: alarm rates, floods, chattering and stale alarms, states.
    Health,
    /// Acknowledge an alarm.
    Ack(Act),
    /// Shelve an alarm for a while (`--for` or `--until`, at most 30 days), with a reason.
    #[command(group(clap::ArgGroup::new("expiry").required(true).args(["for_", "until"])))]
    Shelve {
        #[command(flatten)]
        act: Act,
        /// Why the alarm is shelved
        #[arg(long, value_parser = non_empty())]
        reason: String,
        /// For how long (e.g. 30m, 2h, 1d)
        #[arg(long = "for", id = "for_", value_name = "DURATION", value_parser = duration)]
        for_: Option<String>,
        /// Until this time (RFC 3339)
        #[arg(long, value_name = "TIME")]
        until: Option<String>,
    },
    /// End an alarm's shelve.
    Unshelve(Act),
    /// Take an alarm out of service (maintenance): followed, never annunciated.
    OutOfService(Act),
    /// Return an alarm to service.
    InService(Act),
    /// Follow the domain's alarm changes live and print one line per change until Ctrl-C.
    Watch {
        /// Stop after this many changes
        #[arg(long, short = 'n', value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
    },
}

/// The alarm an action is on, and the operator's comment.
#[derive(Debug, clap::Args)]
pub struct Act {
    #[arg(value_parser = non_empty())]
    alarm: String,
    /// A comment for the journal
    #[arg(long, short = 'c')]
    comment: Option<String>,
}

pub fn run(client: &Client, format: OutputFormat, command: AlarmsCommand) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        AlarmsCommand::List => {
            let alarms: Vec<Value> = client.get(&format!("/svc/{TABLE}/all"))?;
            output::rows(&mut out, format, &alarms, "name")?;
        }
        AlarmsCommand::Create { file } => {
            let record: Value =
                client.call(Method::POST, &format!("/svc/{TABLE}"), &read_object(&file)?)?;
            output::object(&mut out, format, &record)?;
        }
        AlarmsCommand::Update { alarm, file } => {
            let id = id_by_name(client, TABLE, &alarm)?;
            let path = format!("/svc/{}", segment(&id));
            let record: Value = client.call(Method::PUT, &path, &read_object(&file)?)?;
            output::object(&mut out, format, &record)?;
        }
        AlarmsCommand::Delete { alarm } => delete_by_name(client, format, &mut out, TABLE, &alarm)?,
        AlarmsCommand::Active { priority, state } => {
            let query = present(&[("priority", priority), ("state", state)]);
            let active: Vec<Value> = client.get_query("/svc/alarms/active", &query)?;
            let rows: Vec<Value> = active.iter().map(|a| standing_row(a, format)).collect();
            output::rows(&mut out, format, &rows, "name")?;
        }
        AlarmsCommand::Journal {
            alarm,
            state,
            priority,
            who,
            from,
            to,
            before,
            limit,
        } => {
            let now = chrono::Utc::now();
            let query = present(&[
                ("alarm", alarm),
                ("state", state),
                ("priority", priority),
                ("who", who),
                ("from", from.map(|t| parse_time(&t, now)).transpose()?),
                ("to", to.map(|t| parse_time(&t, now)).transpose()?),
                ("before", before.map(|b| b.to_string())),
                ("limit", limit.map(|l| l.to_string())),
            ]);
            let entries: Vec<Value> = client.get_query("/svc/alarms/journal", &query)?;
            output::rows(&mut out, format, &entries, "alarm")?;
        }
        AlarmsCommand::Health => {
            let health: Value = client.get("/svc/alarms/health")?;
            output::object(&mut out, format, &health)?;
        }
        AlarmsCommand::Ack(act) => acted(client, format, &mut out, "acknowledge", act, None)?,
        AlarmsCommand::Shelve {
            act,
            reason,
            for_,
            until,
        } => {
            let mut body = Map::new();
            body.insert("reason".into(), json!(reason));
            if let Some(d) = for_ {
                body.insert("duration".into(), json!(d));
            }
            if let Some(t) = until {
                body.insert("until".into(), json!(parse_time(&t, chrono::Utc::now())?));
            }
            acted(client, format, &mut out, "shelve", act, Some(body))?;
        }
        AlarmsCommand::Unshelve(act) => acted(client, format, &mut out, "unshelve", act, None)?,
        AlarmsCommand::OutOfService(act) => {
            acted(client, format, &mut out, "out-of-service", act, None)?
        }
        AlarmsCommand::InService(act) => acted(client, format, &mut out, "in-service", act, None)?,
        AlarmsCommand::Watch { count } => {
            drop(out);
            return watch(client, format, count);
        }
    }
    out.flush()?;
    Ok(())
}

/// The query pairs that were given.
fn present(pairs: &[(&str, Option<String>)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
        .collect()
}

/// A standing alarm as a row: everything in JSON, the columns an operator scans in a table or
/// CSV (the shelve and maintenance objects would not fit a cell).
fn standing_row(alarm: &Value, format: OutputFormat) -> Value {
    if matches!(format, OutputFormat::Json | OutputFormat::Jsonl) {
        return alarm.clone();
    }
    let pick = [
        "name", "priority", "state", "value", "unit", "tag", "since", "message",
    ];
    Value::Object(
        pick.iter()
            .map(|k| (k.to_string(), alarm.get(*k).cloned().unwrap_or(Value::Null)))
            .collect(),
    )
}

/// Posts an operator's action and shows the alarm as it stands after it.
fn acted(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    action: &str,
    act: Act,
    extra: Option<Map<String, Value>>,
) -> CliResult<()> {
    let mut body = extra.unwrap_or_default();
    body.insert("alarm".into(), json!(act.alarm));
    if let Some(comment) = act.comment {
        body.insert("comment".into(), json!(comment));
    }
    let status: Value = client.call(Method::POST, &format!("/svc/alarms/{action}"), &body)?;
    match format {
        OutputFormat::Table => writeln!(
            out,
            "{}: {}",
            act.alarm,
            status["state"].as_str().unwrap_or("?")
        )?,
        _ => output::object(out, format, &status)?,
    }
    Ok(())
}

/// Follows the event stream: skips the opening snapshot, prints each `change` (JSON lines in
/// JSON formats, a CSV row, or one readable line), stops after `count` or on the server's
/// `error` event (a revoked credential: exit 1).
fn watch(client: &Client, format: OutputFormat, count: Option<u64>) -> CliResult<()> {
    let request = client
        .request(Method::GET, "/svc/alarms/stream")
        .header("Accept", "text/event-stream")
        .timeout(WATCH_TIMEOUT);
    let response = client.send(request)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    const COLUMNS: [&str; 7] = [
        "at", "alarm", "state", "previous", "value", "who", "message",
    ];
    if format == OutputFormat::Csv {
        writeln!(out, "{}", COLUMNS.join(","))?;
        out.flush()?;
    }
    let (mut event, mut data, mut seen) = (String::new(), String::new(), 0u64);
    for line in BufReader::new(response).lines() {
        let line =
            line.map_err(|e| CliError::failed(format!("the alarm stream broke off: {e}")))?;
        if let Some(name) = line.strip_prefix("event:") {
            event = name.trim().to_string();
        } else if let Some(chunk) = line.strip_prefix("data:") {
            data.push_str(chunk.strip_prefix(' ').unwrap_or(chunk));
        } else if line.is_empty() {
            let (name, body) = (std::mem::take(&mut event), std::mem::take(&mut data));
            match name.as_str() {
                "change" => {
                    let change: Value = serde_json::from_str(&body).map_err(|e| {
                        CliError::failed(format!("unexpected change on the alarm stream: {e}"))
                    })?;
                    print_change(&mut out, format, &change, &COLUMNS)?;
                    out.flush()?;
                    seen += 1;
                    if count.is_some_and(|n| seen >= n) {
                        return Ok(());
                    }
                }
                "error" => {
                    return Err(CliError::failed(format!(
                        "the server ended the alarm stream: {body}"
                    )))
                }
                _ => {} // the snapshot, heartbeats
            }
        }
    }
    Err(CliError::failed("the server closed the alarm stream"))
}

fn print_change(
    out: &mut dyn Write,
    format: OutputFormat,
    change: &Value,
    columns: &[&str],
) -> CliResult<()> {
    match format {
        OutputFormat::Json | OutputFormat::Jsonl => {
            writeln!(out, "{change}")?;
        }
        OutputFormat::Csv => {
            let cells: Vec<String> = columns
                .iter()
                .map(|c| output::cell(&change[*c], usize::MAX))
                .collect();
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(&mut *out);
            w.write_record(&cells).map_err(output::csv_io)?;
            w.flush()?;
        }
        OutputFormat::Table => {
            let who = change["who"]
                .as_str()
                .map(|w| format!(" by {w}"))
                .unwrap_or_default();
            writeln!(
                out,
                "{} {} {} → {} value {}{} {}",
                change["at"].as_str().unwrap_or(""),
                change["alarm"].as_str().unwrap_or(""),
                change["previous"].as_str().unwrap_or(""),
                change["state"].as_str().unwrap_or(""),
                output::cell(&change["value"], 40),
                who,
                change["message"].as_str().unwrap_or(""),
            )?;
        }
    }
    Ok(())
}
