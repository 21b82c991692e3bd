//! Plant compression per tag, off by default (issue 33): an exception deadband and
//! swinging-door compression, as PI and Canary define them, applied to what the historian
//! stores. Live MQTT delivery, SSE streams and last values still see every value.
//!
//! `settings` reads and checks a tag's `compression` member, `filter` decides per series which
//! points to store, and `series` keeps one filter per compressed series.

mod filter;
mod series;
mod settings;

#[cfg(test)]
mod tests;

pub use filter::{Reading, Sample, SeriesFilter};
pub use series::Compressor;
pub use settings::Compression;
