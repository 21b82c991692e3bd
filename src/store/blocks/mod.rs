//! PLACEHOLDER codec (replaced by the real pco/zstd codec from branch i33-codec).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct BlockPoint {
    pub ts_ms: i64,
    pub seq: i64,
    pub value: Value,
    pub quality: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BlockSummary {
    pub start_ms: i64,
    pub end_ms: i64,
    pub count: i64,
    pub num_count: i64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
    pub first: BlockPoint,
    pub last: BlockPoint,
}

#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("block is corrupt: {0}")]
    Corrupt(String),
}

pub const MAX_POINTS: usize = 4096;
pub const MAX_SPAN_MS: i64 = 3_600_000;

pub fn encode(points: &[BlockPoint]) -> Result<Vec<u8>, BlockError> {
    let rows: Vec<(i64, i64, &Value, u32)> = points
        .iter()
        .map(|p| (p.ts_ms, p.seq, &p.value, p.quality))
        .collect();
    serde_json::to_vec(&rows).map_err(|e| BlockError::Corrupt(e.to_string()))
}

pub fn decode(bytes: &[u8]) -> Result<Vec<BlockPoint>, BlockError> {
    let rows: Vec<(i64, i64, Value, u32)> =
        serde_json::from_slice(bytes).map_err(|e| BlockError::Corrupt(e.to_string()))?;
    Ok(rows
        .into_iter()
        .map(|(ts_ms, seq, value, quality)| BlockPoint {
            ts_ms,
            seq,
            value,
            quality,
        })
        .collect())
}

pub fn summarize(points: &[BlockPoint]) -> Option<BlockSummary> {
    let first = points.first()?.clone();
    let last = points.last()?.clone();
    let nums: Vec<f64> = points
        .iter()
        .filter_map(|p| crate::store::types::numeric(&p.value))
        .collect();
    let some = !nums.is_empty();
    Some(BlockSummary {
        start_ms: first.ts_ms,
        end_ms: last.ts_ms,
        count: points.len() as i64,
        num_count: nums.len() as i64,
        min: some.then(|| nums.iter().copied().fold(f64::INFINITY, f64::min)),
        max: some.then(|| nums.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        sum: some.then(|| nums.iter().sum()),
        first,
        last,
    })
}
