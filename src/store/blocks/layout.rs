//! How a block's points become columns and back: each value gets a [`Kind`], and its payload goes
//! to the column of that kind (f64, i64 or text); kinds without a payload (booleans, null) live
//! in the kind column alone. The split is exact: `1` and `1.0` get different kinds, integers stay
//! integers, and the join rebuilds the very same `Value`s.

use super::{BlockError, BlockPoint, MAX_TEXT_BYTES};
use serde_json::{Number, Value};

/// What one point's value is, and so which column holds its payload. The numbers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A JSON float: the f64 column.
    Float = 0,
    /// A JSON integer (within i64): the i64 column.
    Int = 1,
    /// A JSON integer kept in the f64 column: in a block that has floats, integers a double holds
    /// exactly (|n| ≤ 2^53) go there, so a tag whose publisher writes `21` for 21.0 keeps one
    /// smooth column for pco instead of two broken ones.
    IntAsFloat = 2,
    /// A JSON integer above i64::MAX: the i64 column, as the same 64 bits.
    BigUint = 3,
    False = 4,
    True = 5,
    Null = 6,
    /// A string: its UTF-8 in the text column.
    String = 7,
    /// An array or object: its JSON text in the text column.
    Json = 8,
}

impl Kind {
    /// The kind stored as `code`, if any.
    pub fn from_code(code: u8) -> Option<Kind> {
        const ALL: [Kind; 9] = [
            Kind::Float,
            Kind::Int,
            Kind::IntAsFloat,
            Kind::BigUint,
            Kind::False,
            Kind::True,
            Kind::Null,
            Kind::String,
            Kind::Json,
        ];
        ALL.get(usize::from(code)).copied()
    }
}

/// The largest integer magnitude a double holds exactly, with every smaller one.
const EXACT_IN_F64: u64 = 1 << 53;

/// A block's points as columns. `seq` and `quality` may be empty, meaning all zero.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns {
    pub ts: Vec<i64>,
    pub seq: Vec<i64>,
    /// One [`Kind`] code per point.
    pub kinds: Vec<u8>,
    pub floats: Vec<f64>,
    pub ints: Vec<i64>,
    /// The length of each string or JSON text, in point order; the texts themselves follow each
    /// other in `text`.
    pub text_lens: Vec<u32>,
    pub text: Vec<u8>,
    pub quality: Vec<u32>,
}

/// How many values each payload column holds for a given kind column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColumnLengths {
    pub floats: usize,
    pub ints: usize,
    pub texts: usize,
}

impl ColumnLengths {
    /// Adds a run of `len` points of kind `code`; Err at a code that is no kind.
    pub fn add_run(&mut self, code: u8, len: usize) -> Result<(), BlockError> {
        match Kind::from_code(code) {
            Some(Kind::Float | Kind::IntAsFloat) => self.floats += len,
            Some(Kind::Int | Kind::BigUint) => self.ints += len,
            Some(Kind::String | Kind::Json) => self.texts += len,
            Some(Kind::False | Kind::True | Kind::Null) => {}
            None => {
                return Err(BlockError::corrupt(format!(
                    "it has an unknown kind {code}"
                )))
            }
        }
        Ok(())
    }

    /// The lengths `kinds` call for, or Err at a code that is no kind.
    pub fn of(kinds: &[u8]) -> Result<ColumnLengths, BlockError> {
        let mut lengths = ColumnLengths::default();
        for &code in kinds {
            lengths.add_run(code, 1)?;
        }
        Ok(lengths)
    }
}

impl Columns {
    /// The columns of `points`, in their order.
    pub fn split(points: &[BlockPoint]) -> Result<Columns, BlockError> {
        let n = points.len();
        let floats_here = points
            .iter()
            .any(|p| matches!(&p.value, Value::Number(x) if x.is_f64()));
        let mut columns = Columns {
            ts: Vec::with_capacity(n),
            seq: Vec::with_capacity(n),
            kinds: Vec::with_capacity(n),
            quality: Vec::with_capacity(n),
            ..Columns::default()
        };
        for point in points {
            columns.ts.push(point.ts_ms);
            columns.seq.push(point.seq);
            columns.quality.push(point.quality);
            let kind = columns.push_value(&point.value, floats_here)?;
            columns.kinds.push(kind as u8);
        }
        if columns.text.len() > MAX_TEXT_BYTES {
            return Err(BlockError::TooMuchText {
                bytes: columns.text.len(),
                max: MAX_TEXT_BYTES,
            });
        }
        Ok(columns)
    }

    /// Files `value`'s payload in its column and says its kind.
    fn push_value(&mut self, value: &Value, floats_here: bool) -> Result<Kind, BlockError> {
        Ok(match value {
            Value::Null => Kind::Null,
            Value::Bool(false) => Kind::False,
            Value::Bool(true) => Kind::True,
            Value::Number(x) => {
                if let Some(i) = x.as_i64() {
                    if floats_here && i.unsigned_abs() <= EXACT_IN_F64 {
                        self.floats.push(i as f64);
                        Kind::IntAsFloat
                    } else {
                        self.ints.push(i);
                        Kind::Int
                    }
                } else if let Some(u) = x.as_u64() {
                    // Above i64::MAX: the same 64 bits, read back as u64.
                    self.ints.push(u as i64);
                    Kind::BigUint
                } else {
                    // serde_json holds a float as an f64 (no arbitrary precision in this build).
                    self.floats.push(x.as_f64().unwrap_or(f64::NAN));
                    Kind::Float
                }
            }
            Value::String(s) => {
                self.push_text(s.as_bytes())?;
                Kind::String
            }
            Value::Array(_) | Value::Object(_) => {
                let json =
                    serde_json::to_vec(value).map_err(|e| BlockError::Compress(e.to_string()))?;
                self.push_text(&json)?;
                Kind::Json
            }
        })
    }

    fn push_text(&mut self, text: &[u8]) -> Result<(), BlockError> {
        let len = u32::try_from(text.len()).map_err(|_| BlockError::TooMuchText {
            bytes: text.len(),
            max: MAX_TEXT_BYTES,
        })?;
        self.text_lens.push(len);
        self.text.extend_from_slice(text);
        Ok(())
    }

    /// The points these columns hold, or Err when they do not fit together.
    pub fn join(self) -> Result<Vec<BlockPoint>, BlockError> {
        let n = self.ts.len();
        let lengths = ColumnLengths::of(&self.kinds)?;
        let fits = self.kinds.len() == n
            && (self.seq.is_empty() || self.seq.len() == n)
            && (self.quality.is_empty() || self.quality.len() == n)
            && self.floats.len() == lengths.floats
            && self.ints.len() == lengths.ints
            && self.text_lens.len() == lengths.texts
            && self.text_lens.iter().map(|&l| l as u64).sum::<u64>() == self.text.len() as u64;
        if !fits {
            return Err(BlockError::corrupt(
                "its columns disagree on how many values they hold",
            ));
        }
        let mut points: Vec<BlockPoint> = Vec::with_capacity(n);
        let mut values = Payloads {
            floats: self.floats.iter(),
            ints: self.ints.iter(),
            lens: self.text_lens.iter(),
            text: &self.text,
        };
        if self.kinds.iter().all(|&k| k == Kind::Float as u8) {
            // The common case, without a per-point match: a float tag.
            let mut finite = true;
            points.extend(self.ts.iter().zip(&self.floats).map(|(&ts_ms, &x)| {
                finite &= x.is_finite();
                BlockPoint {
                    ts_ms,
                    seq: 0,
                    value: Number::from_f64(x).map_or(Value::Null, Value::Number),
                    quality: 0,
                }
            }));
            if !finite {
                return Err(BlockError::corrupt("it has a float JSON cannot hold"));
            }
        } else {
            for (&ts_ms, &code) in self.ts.iter().zip(&self.kinds) {
                points.push(BlockPoint {
                    ts_ms,
                    seq: 0,
                    value: values.next(code)?,
                    quality: 0,
                });
            }
        }
        // seq and quality are mostly absent (all zero): filled in a pass of their own.
        for (point, &seq) in points.iter_mut().zip(&self.seq) {
            point.seq = seq;
        }
        for (point, &quality) in points.iter_mut().zip(&self.quality) {
            point.quality = quality;
        }
        Ok(points)
    }
}

impl Columns {
    /// The timestamps and numeric readings (numbers, booleans as 0/1) of these columns, in point
    /// order; points without one (null, text) are left out. The text columns are not needed.
    pub fn readings(self) -> Result<Readings, BlockError> {
        let lengths = ColumnLengths::of(&self.kinds)?;
        let fits = self.kinds.len() == self.ts.len()
            && self.floats.len() == lengths.floats
            && self.ints.len() == lengths.ints;
        if !fits {
            return Err(BlockError::corrupt(
                "its columns disagree on how many values they hold",
            ));
        }
        if self.kinds.iter().all(|&k| k == Kind::Float as u8) {
            // A float tag: the columns are the readings.
            return Ok(Readings {
                ts: self.ts,
                values: self.floats,
            });
        }
        let mut readings = Readings::default();
        let (mut floats, mut ints) = (self.floats.iter(), self.ints.iter());
        for (&ts, &code) in self.ts.iter().zip(&self.kinds) {
            let value = match Kind::from_code(code) {
                Some(Kind::Float | Kind::IntAsFloat) => *floats.next().unwrap_or(&f64::NAN),
                Some(Kind::Int) => *ints.next().unwrap_or(&0) as f64,
                Some(Kind::BigUint) => *ints.next().unwrap_or(&0) as u64 as f64,
                Some(Kind::False) => 0.0,
                Some(Kind::True) => 1.0,
                _ => continue,
            };
            readings.ts.push(ts);
            readings.values.push(value);
        }
        Ok(readings)
    }
}

/// The numeric readings of a block's points, as two columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    pub ts: Vec<i64>,
    pub values: Vec<f64>,
}

/// The payload columns as they are read, point by point, in a join.
struct Payloads<'a> {
    floats: std::slice::Iter<'a, f64>,
    ints: std::slice::Iter<'a, i64>,
    lens: std::slice::Iter<'a, u32>,
    text: &'a [u8],
}

impl Payloads<'_> {
    /// The next value of kind `code`. The columns' lengths were checked against the kinds, so
    /// a column never runs out; the fallbacks only keep this free of panics.
    fn next(&mut self, code: u8) -> Result<Value, BlockError> {
        Ok(match Kind::from_code(code) {
            Some(Kind::Float) => float_value(*self.floats.next().unwrap_or(&f64::NAN))?,
            Some(Kind::IntAsFloat) => int_from_float(*self.floats.next().unwrap_or(&0.5))?,
            Some(Kind::Int) => Value::from(*self.ints.next().unwrap_or(&0)),
            Some(Kind::BigUint) => Value::from(*self.ints.next().unwrap_or(&0) as u64),
            Some(Kind::False) => Value::Bool(false),
            Some(Kind::True) => Value::Bool(true),
            Some(Kind::Null) => Value::Null,
            Some(kind @ (Kind::String | Kind::Json)) => {
                let len = (*self.lens.next().unwrap_or(&0) as usize).min(self.text.len());
                let (bytes, rest) = self.text.split_at(len);
                self.text = rest;
                text_value(kind, bytes)?
            }
            None => return Err(BlockError::corrupt("it has an unknown kind")),
        })
    }
}

/// A stored float as JSON; a JSON number is never NaN or infinite, so one is corruption.
fn float_value(x: f64) -> Result<Value, BlockError> {
    Number::from_f64(x)
        .map(Value::Number)
        .ok_or_else(|| BlockError::corrupt("it has a float JSON cannot hold"))
}

/// An integer kept in the f64 column, back as the integer (only exact ones were put there).
fn int_from_float(x: f64) -> Result<Value, BlockError> {
    let i = x as i64;
    if i.unsigned_abs() <= EXACT_IN_F64 && (i as f64).to_bits() == x.to_bits() {
        Ok(Value::from(i))
    } else {
        Err(BlockError::corrupt(
            "it has an integer that is not a whole number",
        ))
    }
}

fn text_value(kind: Kind, bytes: &[u8]) -> Result<Value, BlockError> {
    if kind == Kind::String {
        let s = std::str::from_utf8(bytes)
            .map_err(|_| BlockError::corrupt("it has a string that is not UTF-8"))?;
        Ok(Value::String(s.to_owned()))
    } else {
        serde_json::from_slice(bytes)
            .map_err(|_| BlockError::corrupt("it has JSON that does not parse"))
    }
}
