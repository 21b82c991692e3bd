//! One numeric column through pco: timestamps, seq, kinds, quality, f64 and i64 values. pco is
//! lossless on every bit pattern (NaN payloads, ±inf, −0.0, subnormals), finds delta orders and
//! regular timestamps by itself, and stores decimal-looking floats (21.37) as integers times a
//! base, which is most of a plant's values.

use super::BlockError;
use pco::data_types::Number;
use pco::standalone::{simple_compress, simple_decompress_into};
use pco::ChunkConfig;

/// `values` compressed as one pco chunk with `config`.
pub fn encode_numbers<T: Number>(
    values: &[T],
    config: &ChunkConfig,
) -> Result<Vec<u8>, BlockError> {
    simple_compress(values, config).map_err(|e| BlockError::Compress(e.to_string()))
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
