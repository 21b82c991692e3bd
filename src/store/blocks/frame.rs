//! A block's bytes around its columns: a version byte, a CRC-32 of everything after the header,
//! then varints, flag bytes and length-prefixed sections (and the varints inside sections). The version tells a later format apart;
//! the checksum turns a damaged block into an error before any decoder reads it.
//!
//! ```text
//! version (1) | crc32 of the rest (4, LE) | body: varints, bytes, sections (varint len + bytes)
//! ```

use super::BlockError;

/// The format [`Writer::new`] writes: 2 (decimal floats as integers, `decimal.rs`).
pub const VERSION: u8 = 2;

/// The format of a block in pages (`paged.rs`), which [`Writer::paged`] writes.
pub const PAGED_VERSION: u8 = 3;

/// The oldest format [`Reader`] still reads: 1 (blocks written before decimal floats).
pub const OLDEST_VERSION: u8 = 1;

/// The version byte and the checksum.
const HEADER: usize = 5;

/// Builds a block's bytes.
pub struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::of_version(VERSION)
    }

    /// A writer of a block in pages.
    pub fn paged() -> Writer {
        Writer::of_version(PAGED_VERSION)
    }

    fn of_version(version: u8) -> Writer {
        let mut bytes = Vec::with_capacity(256);
        bytes.extend_from_slice(&[version, 0, 0, 0, 0]);
        Writer { bytes }
    }

    pub fn byte(&mut self, byte: u8) {
        self.bytes.push(byte);
    }

    pub fn varint(&mut self, value: u64) {
        put_varint(&mut self.bytes, value);
    }

    pub fn section(&mut self, section: &[u8]) {
        self.varint(section.len() as u64);
        self.bytes.extend_from_slice(section);
    }

    /// A float as its eight bytes, little-endian (every bit kept).
    pub fn f64(&mut self, x: f64) {
        self.bytes.extend_from_slice(&x.to_le_bytes());
    }

    /// The finished block, its checksum filled in.
    pub fn finish(mut self) -> Vec<u8> {
        let crc = crc32fast::hash(&self.bytes[HEADER..]);
        self.bytes[1..HEADER].copy_from_slice(&crc.to_le_bytes());
        self.bytes
    }
}

/// LEB128: seven bits a byte, low bits first.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a block's bytes in the order [`Writer`] wrote them; every read is bounds-checked.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The version and body of `bytes`, once its version is one this reads and its checksum
    /// is right.
    pub fn open(bytes: &'a [u8]) -> Result<(u8, Reader<'a>), BlockError> {
        let Some(&version) = bytes.first() else {
            return Err(BlockError::corrupt("it is empty"));
        };
        if !(OLDEST_VERSION..=PAGED_VERSION).contains(&version) {
            return Err(BlockError::UnknownVersion(version));
        }
        if bytes.len() < HEADER {
            return Err(BlockError::corrupt("it is shorter than its header"));
        }
        let stored = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        if crc32fast::hash(&bytes[HEADER..]) != stored {
            return Err(BlockError::corrupt("its checksum does not match"));
        }
        Ok((version, Reader::new(&bytes[HEADER..])))
    }

    /// Reads `bytes` as they are (a section's content), with no header.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    pub fn byte(&mut self) -> Result<u8, BlockError> {
        let (&byte, rest) = self.rest.split_first().ok_or_else(truncated)?;
        self.rest = rest;
        Ok(byte)
    }

    pub fn varint(&mut self) -> Result<u64, BlockError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(BlockError::corrupt("it has a number of more than 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(BlockError::corrupt("it has a number of more than 64 bits"))
    }

    /// A float [`Writer::f64`] wrote.
    pub fn f64(&mut self) -> Result<f64, BlockError> {
        let Some((bytes, rest)) = self.rest.split_first_chunk::<8>() else {
            return Err(truncated());
        };
        self.rest = rest;
        Ok(f64::from_le_bytes(*bytes))
    }

    pub fn section(&mut self) -> Result<&'a [u8], BlockError> {
        let len = self.varint()?;
        if len > self.rest.len() as u64 {
            return Err(truncated());
        }
        let (section, rest) = self.rest.split_at(len as usize);
        self.rest = rest;
        Ok(section)
    }

    /// Ok when everything was read: bytes left over mean the block is not what it says.
    pub fn finish(self) -> Result<(), BlockError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(BlockError::corrupt("it has bytes after its last column"))
        }
    }
}

fn truncated() -> BlockError {
    BlockError::corrupt("it ends before its last column")
}
