//! The text column through zstd: the block's strings and JSON payloads, concatenated (their
//! lengths are a numeric column). A tag's text repeats (states, status words, JSON of one shape),
//! which is what zstd's matches are for.

use super::{BlockError, MAX_TEXT_BYTES};

/// `text` as one zstd frame at `level`; the frame records its size, which [`decode_text`] checks.
pub fn encode_text(text: &[u8], level: i32) -> Result<Vec<u8>, BlockError> {
    zstd::bulk::compress(text, level).map_err(|e| BlockError::Compress(e.to_string()))
}

/// The `len` bytes of text in `frame`, or Err when the frame is not one of exactly that size.
pub fn decode_text(frame: &[u8], len: usize) -> Result<Vec<u8>, BlockError> {
    if len > MAX_TEXT_BYTES {
        return Err(BlockError::corrupt("its text is longer than a block holds"));
    }
    // The frame's own size must agree before anything is allocated for it.
    match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size == len as u64 => {}
        _ => {
            return Err(BlockError::corrupt(
                "its text frame is not the size its lengths say",
            ))
        }
    }
    let text = zstd::bulk::decompress(frame, len).map_err(BlockError::corrupt)?;
    if text.len() != len {
        return Err(BlockError::corrupt(
            "its text frame is shorter than it says",
        ));
    }
    Ok(text)
}
