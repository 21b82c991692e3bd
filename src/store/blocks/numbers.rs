//! One numeric column through pco: timestamps, seq, quality, f64 and i64 values, text lengths.
//! pco is lossless on every bit pattern (NaN payloads, ±inf, −0.0, subnormals), finds delta
//! orders and regular timestamps by itself, and stores decimal-looking floats (21.37) as integers
//! times a base, which is most of a plant's values.
//!
//! One correction to pco's choices: on a column of long runs (a setpoint, a flag-like integer,
//! a quality that changes twice a day) its automatic delta choice can miss plain deltas and
//! store every value (1.4 KB instead of 0.1 KB for 4,096 points of a step setpoint, measured in
//! bench/historian-codec-results.md), so such a column is also tried with first-order deltas and
//! the smaller kept. Decoding does not care: a chunk says how it was written.

use super::BlockError;
use pco::data_types::Number;
use pco::standalone::{simple_compress, simple_decompress_into};
use pco::{ChunkConfig, DeltaSpec};

/// `values` compressed as one pco chunk with `config` (and, for a column of long runs under
/// automatic delta choice, with first-order deltas if that is smaller).
pub fn encode_numbers<T: Number>(
    values: &[T],
    config: &ChunkConfig,
) -> Result<Vec<u8>, BlockError> {
    smallest(values, config, Vec::len, |config| {
        simple_compress(values, config).map_err(|e| BlockError::Compress(e.to_string()))
    })
}

/// What `compress` makes of `values` with `config`, and, for a column of long runs under
/// automatic delta choice, also with first-order deltas: the smaller by `size`. Shared by
/// whole columns and columns in pages (`paged.rs`).
pub fn smallest<T: Number, R>(
    values: &[T],
    config: &ChunkConfig,
    size: impl Fn(&R) -> usize,
    compress: impl Fn(&ChunkConfig) -> Result<R, BlockError>,
) -> Result<R, BlockError> {
    let auto = compress(config)?;
    let changes = values.windows(2).filter(|w| w[0] != w[1]).count();
    if !matches!(config.delta_spec, DeltaSpec::Auto) || changes * 4 >= values.len() {
        return Ok(auto);
    }
    let deltas = compress(&config.clone().with_delta_spec(DeltaSpec::TryConsecutive(1)))?;
    Ok(if size(&deltas) < size(&auto) {
        deltas
    } else {
        auto
    })
}

/// Exactly `count` numbers from `bytes`, or Err when they hold more, fewer or garbage.
pub fn decode_numbers<T: Number>(bytes: &[u8], count: usize) -> Result<Vec<T>, BlockError> {
    // Filled with a default and then overwritten: pco reports how many it wrote, and a Vec that
    // is never read uninitialized needs no unsafe here.
    let mut values = vec![T::default(); count];
    let progress = simple_decompress_into(bytes, &mut values).map_err(BlockError::corrupt)?;
    if progress.n_processed != count || !progress.finished {
        return Err(BlockError::corrupt(format!(
            "a column holds a different number of values than its kinds say ({count})"
        )));
    }
    Ok(values)
}
