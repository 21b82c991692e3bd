//! The plant data set (examples/common/plant_data.rs) put into svc and into the reference
//! historians for `bench/historian.sh`, and the reads that compare them. Every subcommand prints
//! one JSON line; a failed measurement exits non-zero with a sentence on stderr.
//!
//! Points: `--per-signal` points of each signal of `--set`, one second apart from `--start-ms`.
//! Sets: `numeric` (the five walks, counter, flag, setpoint, analog: what VictoriaMetrics and
//! Prometheus can store, the flag as 0/1), `state` (the string state), `all`, `walk` (walk 0
//! alone: the year chart's tag) and `index` (value N at point N: the raw read's series). svc
//! topics are `<prefix>/<kind>-<index>`; metric and measurement names `<prefix>_<kind>_<index>`
//! (`--prefix` alone for `index`).
//!
//! - `declare`: creates every tag of the set historized (`POST /svc/tags`), with the members
//!   of `--tag-fields` added (a JSON object; the word SPAN in it becomes the signal's span over
//!   the points, largest minus smallest value, 1 for a signal that never moved, and DEVIATION
//!   0.1 % of that span), and checks that the tag record reads back with them.
//! - `publish`: publishes the points to svc over MQTT QoS 1 (`{"value":V,"timestamp":<ms>}`),
//!   `--publishers` connections, each tag from one connection in time order (`--split`: each
//!   tag from several connections, connection k of K sending points k, k + K, …, so it arrives
//!   nearly in order), then waits until the historian's `count` of every tag reaches its points
//!   (`--expect any`: until the counts stop moving for 3 s, not counted in the time).
//! - `footprint`: the bytes of every table named `hist_*` (with its indexes, and on PostgreSQL
//!   its partitions and TOAST) of `--db`, a SQLite file (read-only, `dbstat`) or a `postgres://`
//!   URL (`pg_total_relation_size`), and the rows of `hist_points`. `--settle`: first waits until
//!   `hist_points` holds fewer than `--settle-rows` rows and the sizes held still for 3 s (the
//!   space of closed rows comes back a writer round later), or nothing changed for
//!   `--settle-quiet` seconds, at most `--settle-timeout` seconds; `--vacuum` (PostgreSQL) runs `VACUUM` on the
//!   tables before measuring.
//! - `vm-import`: the points into VictoriaMetrics (`/api/v1/import`, JSON lines).
//! - `influx-write`: the points into InfluxDB 1.x (`/write?precision=ms`, line protocol, a
//!   measurement per signal with its one field `value` typed as published).
//! - `openmetrics`: the points as an OpenMetrics file for `promtool tsdb create-blocks-from`.
//! - `vm-export`: reads the points back from `/api/v1/export`, timed until the body is received,
//!   and checks their number.
//! - `chart` / `vm-chart`: `--queries` charts of `--buckets` buckets of min, mean and max over
//!   the points (three requests sent at once per chart, as a chart view fetches them): svc's
//!   `PATCH /svc/historian` with `bucket` and `aggregation`, VictoriaMetrics's `query_range` of
//!   `min_over_time`, `avg_over_time`, `max_over_time` with `step` = the bucket (`nocache=1`).
//!   p50 and p99 (nearest rank) of a whole chart, after one untimed chart; the charts stop
//!   early once they took `--budget-seconds` (600) in all, and say how many were drawn.
//!
//!   plant_load declare --url http://127.0.0.1:6188 --token JWT --prefix plant --set numeric
//!   plant_load publish --port 1883 --password KEY --url … --token … --set numeric --per-signal 50000
//!   plant_load footprint --db data/svc.db --settle
//!   plant_load vm-import --url http://127.0.0.1:8428 --set numeric --per-signal 50000

#[path = "../common/flags.rs"]
mod flags;
#[path = "../common/plant_data.rs"]
mod plant_data;
#[path = "../common/publisher.rs"]
mod publisher;
#[path = "../common/svc_api.rs"]
mod svc_api;

mod charts;
mod footprint;
mod references;
mod svc_side;
#[cfg(test)]
mod tests;

use flags::Flags;
use plant_data::{Kind, Signal};
use serde_json::Value;

/// 2026-01-01T00:00:00Z: where the plant's points start unless `--start-ms` says otherwise.
pub const DEFAULT_START_MS: i64 = 1_767_225_600_000;

const USAGE: &str = "plant_load declare|publish|footprint|vm-import|influx-write|openmetrics|\
                     vm-export|chart|vm-chart [--flag value]… (see the header of \
                     examples/plant_load/main.rs)";

fn main() {
    let mut raw = std::env::args().skip(1);
    let command = raw
        .next()
        .unwrap_or_else(|| flags::usage("plant_load", USAGE, "no subcommand"));
    let flags = Flags::parse("plant_load", USAGE, raw);
    let result = match command.as_str() {
        "declare" => svc_side::declare(&flags),
        "publish" => svc_side::publish(&flags),
        "footprint" => footprint::run(&flags),
        "vm-import" => references::vm_import(&flags),
        "influx-write" => references::influx_write(&flags),
        "openmetrics" => references::openmetrics(&flags),
        "vm-export" => charts::vm_export(&flags),
        "chart" => charts::svc_chart(&flags),
        "vm-chart" => charts::vm_chart(&flags),
        other => flags.fail(&format!("unknown subcommand {other}")),
    };
    match result {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("plant_load {command}: {e}");
            std::process::exit(1)
        }
    }
}

/// Where a series' values come from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Plant(Signal),
    /// Value N at point N.
    Index,
}

/// One series of a set: its svc topic, its metric or measurement name, and its values.
#[derive(Debug, Clone)]
pub struct Series {
    pub topic: String,
    pub metric: String,
    pub source: Source,
}

impl Series {
    /// Its values from point 0 on.
    pub fn values(&self) -> Box<dyn Iterator<Item = Value> + Send> {
        match self.source {
            Source::Plant(signal) => Box::new(signal.stream()),
            Source::Index => Box::new((0u64..).map(Value::from)),
        }
    }

    /// Whether a numeric-only system stores it.
    pub fn numeric(&self) -> bool {
        match self.source {
            Source::Plant(signal) => signal.kind.numeric(),
            Source::Index => true,
        }
    }
}

/// The points the flags describe.
pub struct Points {
    pub series: Vec<Series>,
    pub per_signal: u64,
    pub start_ms: i64,
}

impl Points {
    pub fn from_flags(flags: &Flags) -> Points {
        let prefix = flags.text("prefix", "plant");
        let walks: u32 = flags.number("walks", 5);
        let set = flags.text("set", "all");
        let all = plant_data::signals(walks);
        let plant: Vec<Signal> = match set.as_str() {
            "all" => all,
            "numeric" => all.into_iter().filter(|s| s.kind.numeric()).collect(),
            "state" => all.into_iter().filter(|s| !s.kind.numeric()).collect(),
            "walk" => vec![Signal {
                kind: Kind::Walk,
                index: 0,
            }],
            "index" => Vec::new(),
            other => flags.fail(&format!(
                "--set {other}: want all, numeric, state, walk or index"
            )),
        };
        let series = if set == "index" {
            vec![Series {
                topic: prefix.clone(),
                metric: prefix.replace(['/', '-'], "_"),
                source: Source::Index,
            }]
        } else {
            plant
                .into_iter()
                .map(|signal| Series {
                    topic: signal.path(&prefix),
                    metric: format!("{}_{}", prefix.replace(['/', '-'], "_"), signal.ident()),
                    source: Source::Plant(signal),
                })
                .collect()
        };
        Points {
            series,
            per_signal: flags.number("per-signal", 50_000),
            start_ms: flags.number("start-ms", DEFAULT_START_MS),
        }
    }

    pub fn ts(&self, n: u64) -> i64 {
        self.start_ms + n as i64 * 1_000
    }

    /// The half-open window holding every point.
    pub fn window(&self) -> (i64, i64) {
        (self.start_ms, self.ts(self.per_signal))
    }

    pub fn total(&self) -> u64 {
        self.per_signal * self.series.len() as u64
    }
}

/// A value as a float for a numeric-only system (booleans as 0/1); `None` for text.
pub fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// p-th percentile by nearest rank of unsorted samples.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}
