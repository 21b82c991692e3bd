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
    let mut runs = Reader::new(bytes);
    let mut kinds = Vec::with_capacity(count);
    while !runs.is_empty() {
        let code = runs.byte()?;
        if Kind::from_code(code).is_none() {
            return Err(BlockError::corrupt(format!(
                "it has an unknown kind {code}"
            )));
        }
        let len = runs.varint()?;
        if len == 0 || len > (count - kinds.len()) as u64 {
            return Err(BlockError::corrupt("its kinds do not add up to its count"));
        }
        kinds.resize(kinds.len() + len as usize, code);
    }
    if kinds.len() != count {
        return Err(BlockError::corrupt("its kinds do not add up to its count"));
    }
    Ok(kinds)
}
