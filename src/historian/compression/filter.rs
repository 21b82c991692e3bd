//! The per-series compression filter: fed every accepted point of one series in arrival order,
//! it says which points to store now. PI's order: the exception deadband first, then the
//! swinging door on what passes it, with `min_time`, the `max_time` heartbeat, and the points
//! that are always stored.
//!
//! - Compressed: finite JSON numbers, and booleans as 0 and 1 (with a deadband below 1, a flag
//!   that flips rarely keeps the points around each flip). Always stored (and whatever the
//!   filter holds is stored first, so the stretch before stays reconstructible): the first
//!   point, anything else (a string, null, an array or object), a change of kind (between
//!   numbers, booleans and the rest), a point whose quality differs from the previous point's,
//!   and a point not newer than the newest seen (out of order, or a second value at the same
//!   millisecond, which interpolation over time cannot place).
//! - Deadband: a level within `deadband` of the reference (the last point passed on) is held
//!   back as the "previous" value; when a later one passes, the held one is passed on first, so
//!   the last value before a change is kept.
//! - Swinging door: the doors pivot on the last stored point itself (not at ±deviation from it,
//!   as Bristol's original does, which lets a point drift up to twice the deviation from the
//!   stored line). They bound the slopes of the lines from it that pass within `deviation` of
//!   every point since; a new point whose own line leaves them stores the held candidate, which
//!   then pivots the doors.
//! - `min_time`: a point arriving less than `min_time` after the last stored point is not
//!   tested (PI's compression minimum, a noise limiter); only the latest such point is kept,
//!   for the heartbeat.
//! - `max_time`: a point at least `max_time` after the last stored one passes the deadband and
//!   is stored (without the previous value when it is within the deadband); and when a point
//!   comes more than `max_time` after the last stored one, what the filter holds is stored
//!   first, so stored points are never further apart than `max_time` while points arrive
//!   between them.
//!
//! What this guarantees, for the points not exempted by `min_time` (see the property tests):
//! with a deviation, every original lies within `deviation + 2 × deadband` of the line between
//! the stored points around it; with a deadband alone, within `deadband` of the last stored
//! value at or before it.

use super::Compression;
use serde_json::Value;

/// One point as the filter reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub ts_ms: i64,
    pub reading: Reading,
    /// The point's quality as an OPC UA status code (0 is good).
    pub quality: u32,
}

/// What the filter reads of a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    Number(f64),
    Flag(bool),
    /// A string, null, an array or an object: always stored.
    Other,
}

/// The kinds the filter compresses; a change of kind is always stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    Flag,
}

impl Reading {
    pub fn of(value: &Value) -> Reading {
        match value {
            Value::Number(n) => n.as_f64().map_or(Reading::Other, Reading::Number),
            Value::Bool(b) => Reading::Flag(*b),
            _ => Reading::Other,
        }
    }

    /// The level the bands and the door compare, with its kind; `None` when always stored.
    fn level(self) -> Option<(f64, Kind)> {
        match self {
            Reading::Number(x) if x.is_finite() => Some((x, Kind::Number)),
            Reading::Flag(b) => Some((if b { 1.0 } else { 0.0 }, Kind::Flag)),
            _ => None,
        }
    }
}

/// The state of one series; `T` is what the caller stores (the point itself).
#[derive(Debug)]
pub struct SeriesFilter<T> {
    settings: Compression,
    /// The newest timestamp and the last quality seen; `None` before the first point.
    last: Option<(i64, u32)>,
    /// The current run of in-order levels of one kind; `None` after anything that was always
    /// stored but a number or a flag.
    run: Option<Run<T>>,
}

/// A point the filter holds back.
#[derive(Debug)]
struct Held<T> {
    ts: i64,
    v: f64,
    item: T,
}

/// A run of in-order levels of one kind and quality, from the last point stored.
#[derive(Debug)]
struct Run<T> {
    kind: Kind,
    /// The last stored point: the doors' pivot, and where `min_time` and `max_time` count from.
    stored: (i64, f64),
    /// The deadband's reference: the last point passed on to the door (or stored).
    reference: f64,
    /// The last point the deadband held back.
    previous: Option<Held<T>>,
    /// The door's candidate: the last point it was given, not stored yet.
    candidate: Option<Held<T>>,
    /// The door: the slopes of lines from `stored` within the deviation of every point since.
    lo: f64,
    hi: f64,
    /// The latest point that came within `min_time` of `stored` (never with a candidate or
    /// previous: those are newer, or were stored).
    quiet: Option<Held<T>>,
}

impl<T> SeriesFilter<T> {
    pub fn new(settings: Compression) -> SeriesFilter<T> {
        SeriesFilter {
            settings,
            last: None,
            run: None,
        }
    }

    pub fn settings(&self) -> &Compression {
        &self.settings
    }

    /// Feeds one point; whatever must be stored now goes to `out`, oldest first.
    pub fn push(&mut self, sample: Sample, item: T, out: &mut Vec<T>) {
        let level = sample.reading.level();
        let (in_order, same_quality) = match self.last {
            None => (true, true),
            Some((newest, quality)) => (sample.ts_ms > newest, sample.quality == quality),
        };
        let newest = self.last.map_or(sample.ts_ms, |(n, _)| n.max(sample.ts_ms));
        self.last = Some((newest, sample.quality));
        match (self.run.as_mut(), level) {
            (Some(run), Some((v, kind))) if in_order && same_quality && run.kind == kind => run
                .push(
                    &self.settings,
                    Held {
                        ts: sample.ts_ms,
                        v,
                        item,
                    },
                    out,
                ),
            _ => {
                self.finish(out);
                out.push(item);
                self.run = level
                    .filter(|_| in_order)
                    .map(|(v, kind)| Run::start(kind, sample.ts_ms, v));
            }
        }
    }

    /// Stores whatever the filter holds (a clean shutdown, or the settings change); the
    /// next point starts afresh.
    pub fn finish(&mut self, out: &mut Vec<T>) {
        if let Some(mut run) = self.run.take() {
            run.flush(out);
        }
    }

    /// Whether the filter holds a point back.
    #[cfg(test)]
    pub fn holds(&self) -> bool {
        self.run.as_ref().is_some_and(Run::holds)
    }
}

impl<T> Run<T> {
    fn start(kind: Kind, ts: i64, v: f64) -> Run<T> {
        Run {
            kind,
            stored: (ts, v),
            reference: v,
            previous: None,
            candidate: None,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
            quiet: None,
        }
    }

    fn holds(&self) -> bool {
        self.previous.is_some() || self.candidate.is_some() || self.quiet.is_some()
    }

    fn push(&mut self, settings: &Compression, x: Held<T>, out: &mut Vec<T>) {
        // The heartbeat: the latest point before a gap longer than max_time is stored.
        if x.ts - self.stored.0 > settings.max_ms && self.holds() {
            self.flush(out);
        }
        if x.ts - self.stored.0 < settings.min_ms {
            self.quiet = Some(x);
            return;
        }
        self.quiet = None; // superseded: it was exempt, and `x` is now the latest point
        let due = x.ts - self.stored.0 >= settings.max_ms;
        let within = settings
            .deadband
            .is_some_and(|deadband| (x.v - self.reference).abs() <= deadband);
        if within && !due {
            self.previous = Some(x);
            return;
        }
        // The last value before a change is kept. A point passed only by the heartbeat is no
        // change: the previous one stays within the deadband of the reference and of it.
        match self.previous.take() {
            Some(previous) if !within => self.pass(settings, previous, out),
            _ => {}
        }
        let ts = x.ts;
        self.pass(settings, x, out);
        // Still not stored at max_time: `x` is the door's candidate (a quiet point is sooner
        // than min_time, so never due), and its line covers every point since.
        if ts - self.stored.0 >= settings.max_ms {
            if let Some(candidate) = self.candidate.take() {
                self.store(candidate, out);
            }
        }
    }

    /// A point that passed the deadband: stored (no deviation), or given to the door.
    fn pass(&mut self, settings: &Compression, y: Held<T>, out: &mut Vec<T>) {
        let Some(deviation) = settings.deviation else {
            if y.ts - self.stored.0 < settings.min_ms {
                self.quiet = Some(y);
            } else {
                self.reference = y.v;
                self.store(y, out);
            }
            return;
        };
        if self.candidate.is_some() {
            let slope = (y.v - self.stored.1) / (y.ts - self.stored.0) as f64;
            if !(self.lo <= slope && slope <= self.hi) {
                if let Some(candidate) = self.candidate.take() {
                    self.store(candidate, out);
                }
            }
        }
        // Right after a store the point may be too soon to test.
        if y.ts - self.stored.0 < settings.min_ms {
            self.quiet = Some(y);
            return;
        }
        let dt = (y.ts - self.stored.0) as f64;
        self.lo = self.lo.max((y.v - deviation - self.stored.1) / dt);
        self.hi = self.hi.min((y.v + deviation - self.stored.1) / dt);
        self.reference = y.v;
        self.quiet = None;
        self.candidate = Some(y);
    }

    fn store(&mut self, point: Held<T>, out: &mut Vec<T>) {
        self.stored = (point.ts, point.v);
        self.lo = f64::NEG_INFINITY;
        self.hi = f64::INFINITY;
        out.push(point.item);
    }

    /// Stores what is held, oldest first: the candidate, the previous value, or the latest
    /// quiet point; the last of them becomes the reference.
    fn flush(&mut self, out: &mut Vec<T>) {
        if let Some(candidate) = self.candidate.take() {
            self.store(candidate, out);
        }
        if let Some(previous) = self.previous.take() {
            self.store(previous, out);
        }
        if let Some(quiet) = self.quiet.take() {
            self.store(quiet, out);
        }
        self.reference = self.stored.1;
    }
}
