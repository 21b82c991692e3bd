//! The kind column as runs: a series keeps one kind for long stretches (a float tag, a flag that
//! flips hourly, a walk whose publisher sometimes writes `21` for 21.0), so (kind, length) pairs
//! are a few bytes a block and decode at memset speed.

use super::frame::{put_varint, Reader};
use super::layout::Kind;
use super::BlockError;

/// `kinds` as (code byte, run length varint) pairs.
pub fn encode_runs(kinds: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for run in kinds.chunk_by(|a, b| a == b) {
        out.push(run[0]);
        put_varint(&mut out, run.len() as u64);
    }
    out
}

/// Exactly `count` kinds from `bytes`, or Err at an unknown kind, an empty run or a count that
/// does not add up.
pub fn decode_runs(bytes: &[u8], count: usize) -> Result<Vec<u8>, BlockError> {
    let mut kinds = Vec::with_capacity(count);
    for (code, len) in decode_run_list(bytes, count)? {
        kinds.resize(kinds.len() + len, code);
    }
    Ok(kinds)
}

/// The (kind code, length) runs of exactly `count` kinds, checked as [`decode_runs`] checks
/// them, without spelling the kinds out (a block in pages spells out only the pages it reads).
pub fn decode_run_list(bytes: &[u8], count: usize) -> Result<Vec<(u8, usize)>, BlockError> {
    let mut reader = Reader::new(bytes);
    let mut runs = Vec::new();
    let mut total = 0usize;
    while !reader.is_empty() {
        let code = reader.byte()?;
        if Kind::from_code(code).is_none() {
            return Err(BlockError::corrupt(format!(
                "it has an unknown kind {code}"
            )));
        }
        let len = reader.varint()?;
        if len == 0 || len > (count - total) as u64 {
            return Err(BlockError::corrupt("its kinds do not add up to its count"));
        }
        total += len as usize;
        runs.push((code, len as usize));
    }
    if total != count {
        return Err(BlockError::corrupt("its kinds do not add up to its count"));
    }
    Ok(runs)
}
