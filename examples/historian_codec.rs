//! Measures the historian's block codec (issue 33, `src/store/blocks/`) on the plant data set, to
//! choose its layout and block size: bytes per point by signal kind and overall, encode and
//! decode points/s, for several block sizes and layouts, and what a year chart of one tag would
//! cost with each block size. Prints markdown for `bench/historian-codec-results.md`.
//!
//!   cargo run --release --example historian_codec [-- --days 2] [--quick]
//!
//! Layouts: svc's (pco for numeric columns, zstd for text) at pco's default level and others;
//! the same columns as raw little-endian bytes through zstd only (levels 3 and 19). Every block
//! is decoded and compared with what was encoded, so a layout that loses anything stops the run.

#[path = "common/plant_data.rs"]
mod plant_data;

/// The codec as svc compiles it: svc is a binary crate, so the example includes its source.
#[path = "../src/store/blocks/mod.rs"]
#[allow(dead_code)] // the example measures; the server uses the rest
mod blocks;

/// The one function the codec reads from the store's types, as the store defines it.
mod store {
    pub mod types {
        use serde_json::Value;

        /// The numeric reading of a value (src/store/types/historian.rs).
        pub fn numeric(value: &Value) -> Option<f64> {
            match value {
                Value::Number(n) => n.as_f64(),
                Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                _ => None,
            }
        }
    }
}

use blocks::layout::Columns;
use blocks::{decode, decode_readings, encode_with, BlockPoint, Settings};

/// svc's allocator (src/memory.rs), so decoding allocates as it does in the server.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use pco::{ChunkConfig, ModeSpec};
use plant_data::Kind;
use rusqlite::{params, Connection};
use std::hint::black_box;
use std::time::Instant;

/// 2026-01-01T00:00:00Z, the data set's first timestamp.
const START_MS: i64 = 1_767_225_600_000;
/// A year of a 1 Hz tag, and the buckets a chart draws it in.
const YEAR_POINTS: i64 = 31_536_000;
const CHART_BUCKETS: i64 = 500;
/// What a block's row costs in the database beyond its bytes: keys, summary columns, record and
/// index overhead (an estimate; the store measures its own).
const ROW_OVERHEAD: f64 = 100.0;
/// Block sizes in points; at 1 Hz, 3,600 / 21,600 / 86,400 are the 1 h / 6 h / 1 day span caps.
const SIZES: [(usize, &str); 9] = [
    (1_024, "1,024"),
    // About what a walk's blocks held when SQLite cut blocks to 1,850 bytes (format 1).
    (3_300, "3,300"),
    (3_600, "1 h"),
    (4_096, "4,096"),
    (8_192, "8,192"),
    (16_384, "16,384"),
    (21_600, "6 h"),
    (65_536, "65,536"),
    (86_400, "1 day"),
];
const KINDS: [Kind; 6] = [
    Kind::Walk,
    Kind::Counter,
    Kind::Flag,
    Kind::Setpoint,
    Kind::Analog,
    Kind::State,
];

type Encoder = Box<dyn Fn(&[BlockPoint]) -> Vec<u8>>;
type Decoder = Box<dyn Fn(&[u8]) -> Vec<BlockPoint>>;

/// One way to write a block and read it back.
struct Layout {
    name: String,
    encode: Encoder,
    decode: Decoder,
}

fn svc_layout(name: &str, numbers: ChunkConfig) -> Layout {
    svc_layout_with(
        name,
        Settings {
            numbers,
            ..Settings::default()
        },
    )
}

fn svc_layout_with(name: &str, settings: Settings) -> Layout {
    Layout {
        name: name.to_string(),
        encode: Box::new(move |points| encode_with(points, &settings).expect("encodes")),
        decode: Box::new(|bytes| decode(bytes).expect("decodes")),
    }
}

/// The same columns as svc's layout, each as raw little-endian bytes in its own zstd frame.
fn zstd_layout(level: i32) -> Layout {
    Layout {
        name: format!("zstd {level} only"),
        encode: Box::new(move |points| {
            let c = Columns::split(points).expect("splits");
            let raw: [Vec<u8>; 8] = [
                le(&c.ts, i64::to_le_bytes),
                le(&c.seq, i64::to_le_bytes),
                c.kinds.clone(),
                le(&c.quality, u32::to_le_bytes),
                le(&c.floats, f64::to_le_bytes),
                le(&c.ints, i64::to_le_bytes),
                le(&c.text_lens, u32::to_le_bytes),
                c.text.clone(),
            ];
            let mut out = Vec::new();
            for column in raw {
                let frame = zstd::bulk::compress(&column, level).expect("compresses");
                out.extend_from_slice(&(column.len() as u32).to_le_bytes());
                out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
                out.extend_from_slice(&frame);
            }
            out
        }),
        decode: Box::new(|mut bytes| {
            let mut column = || {
                let raw_len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
                let len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
                let raw = zstd::bulk::decompress(&bytes[8..8 + len], raw_len).expect("zstd");
                bytes = &bytes[8 + len..];
                raw
            };
            let ts = column();
            let seq = column();
            let kinds = column();
            let quality = column();
            let floats = column();
            let ints = column();
            let text_lens = column();
            let text = column();
            Columns {
                ts: from_le(&ts, i64::from_le_bytes),
                seq: from_le(&seq, i64::from_le_bytes),
                kinds,
                quality: from_le(&quality, u32::from_le_bytes),
                floats: from_le(&floats, f64::from_le_bytes),
                ints: from_le(&ints, i64::from_le_bytes),
                text_lens: from_le(&text_lens, u32::from_le_bytes),
                text,
            }
            .join()
            .expect("joins")
        }),
    }
}

fn le<T: Copy, const N: usize>(values: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| bytes(v)).collect()
}

fn from_le<T, const N: usize>(raw: &[u8], value: fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N)
        .map(|c| value(c.try_into().unwrap()))
        .collect()
}

/// What one layout at one block size measured.
#[derive(Default)]
struct Measured {
    /// Points and bytes by kind (index into KINDS).
    points: [usize; 6],
    bytes: [usize; 6],
    blocks: usize,
    encode_s: f64,
    /// Decode seconds for numeric kinds and for the string state.
    decode_numeric_s: f64,
    decode_text_s: f64,
}

impl Measured {
    fn total_points(&self) -> usize {
        self.points.iter().sum()
    }
    fn per_point(&self, kind: usize) -> f64 {
        self.bytes[kind] as f64 / self.points[kind] as f64
    }
    fn overall(&self) -> f64 {
        self.bytes.iter().sum::<usize>() as f64 / self.total_points() as f64
    }
    fn numeric_points(&self) -> usize {
        self.total_points() - self.points[5]
    }
}

fn measure(layout: &Layout, series: &[(Kind, Vec<BlockPoint>)], size: usize) -> Measured {
    let mut m = Measured::default();
    for (kind, points) in series {
        let k = KINDS.iter().position(|x| x == kind).unwrap();
        let started = Instant::now();
        let blocks: Vec<Vec<u8>> = points.chunks(size).map(|c| (layout.encode)(c)).collect();
        m.encode_s += started.elapsed().as_secs_f64();
        // Decoding is timed as the best of three passes (the machine is shared).
        let mut best = f64::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            for block in &blocks {
                black_box((layout.decode)(black_box(block)));
            }
            best = best.min(started.elapsed().as_secs_f64());
        }
        if *kind == Kind::State {
            m.decode_text_s += best;
        } else {
            m.decode_numeric_s += best;
        }
        for (block, chunk) in blocks.iter().zip(points.chunks(size)) {
            assert!(
                (layout.decode)(block) == chunk,
                "{} lost data at size {size}",
                layout.name
            );
        }
        m.points[k] += points.len();
        m.bytes[k] += blocks.iter().map(Vec::len).sum::<usize>();
        m.blocks += blocks.len();
    }
    m
}

/// Seconds to read the summary columns of `rows` block rows of one series from SQLite (in
/// memory, warm), each row carrying a blob of `blob` bytes as a real block would.
fn summary_scan_s(rows: usize, blob: usize) -> f64 {
    let db = Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE blocks (series INTEGER NOT NULL, start_ms INTEGER NOT NULL,
           end_ms INTEGER NOT NULL, count INTEGER NOT NULL, num_count INTEGER NOT NULL,
           min REAL, max REAL, sum REAL, first TEXT, last TEXT, data BLOB NOT NULL,
           PRIMARY KEY (series, start_ms));",
    )
    .unwrap();
    let tx = db.unchecked_transaction().unwrap();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO blocks VALUES (1, ?1, ?2, 1, 1, 20.0, 30.0, 25.0, '21.5', '22.5', ?3)",
            )
            .unwrap();
        let data = vec![7u8; blob];
        for i in 0..rows as i64 {
            insert
                .execute(params![i * 1000, i * 1000 + 999, data])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    let mut query = db
        .prepare(
            "SELECT start_ms, end_ms, count, num_count, min, max, sum FROM blocks
             WHERE series = 1 AND start_ms >= ?1 AND start_ms < ?2 ORDER BY start_ms",
        )
        .unwrap();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let mut n = 0usize;
        let mut rows_out = query.query(params![0, i64::MAX]).unwrap();
        while let Some(row) = rows_out.next().unwrap() {
            n += black_box(row.get::<_, i64>(2).unwrap()) as usize;
            black_box(row.get::<_, Option<f64>>(4).unwrap());
            black_box(row.get::<_, Option<f64>>(5).unwrap());
            black_box(row.get::<_, Option<f64>>(6).unwrap());
        }
        assert_eq!(n, rows);
        best = best.min(started.elapsed().as_secs_f64());
    }
    best
}

/// The machine's load, printed with the results since other work shares it.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let days: usize = match args.iter().position(|a| a == "--days") {
        Some(i) => args[i + 1].parse().expect("--days N"),
        None => 2,
    };
    let count = days * 86_400;
    let series: Vec<(Kind, Vec<BlockPoint>)> = plant_data::signals(5)
        .into_iter()
        .map(|signal| {
            let points = signal
                .values(count)
                .into_iter()
                .enumerate()
                .map(|(i, value)| BlockPoint {
                    ts_ms: START_MS + i as i64 * 1000,
                    seq: 0,
                    value,
                    quality: 0,
                })
                .collect();
            (signal.kind, points)
        })
        .collect();

    if args.iter().any(|a| a == "--edges") {
        edge_decoding(&series);
        return;
    }
    let default = || ChunkConfig::default();
    let svc = svc_layout("svc: pco 8 + zstd 3", default());
    let float_column = svc_layout_with(
        "svc, floats as floats (format 1)",
        Settings {
            decimal: false,
            ..Settings::default()
        },
    );
    let all_alternatives = [
        float_column,
        svc_layout("pco 0", default().with_compression_level(0)),
        svc_layout("pco 4", default().with_compression_level(4)),
        svc_layout("pco 12", default().with_compression_level(12)),
        svc_layout(
            "pco 8, classic mode",
            default().with_mode_spec(ModeSpec::Classic),
        ),
        zstd_layout(3),
        zstd_layout(19),
    ];
    // `--quick`: svc's layout against format 1 only.
    let quick = args.iter().any(|a| a == "--quick");
    let alternatives = &all_alternatives[..if quick { 1 } else { all_alternatives.len() }];

    println!("- load average (1, 5, 15 min) before: {}", load_average());
    println!(
        "- plant data set: `plant_data::signals(5)` (5 walks, counter, flag, setpoint, analog, \
         state), {days} day(s) at 1 Hz: {count} points per signal, {} in all.\n",
        count * series.len()
    );
    println!(
        "| layout | block | walk | counter | flag | setpoint | analog | state | all | all + {ROW_OVERHEAD} B/block | encode Mpt/s | decode Mpt/s numeric | decode Mpt/s state |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut by_size = Vec::new();
    for (size, label) in SIZES {
        for layout in std::iter::once(&svc).chain(alternatives) {
            let m = measure(layout, &series, size);
            let kinds: Vec<String> = (0..6).map(|k| format!("{:.3}", m.per_point(k))).collect();
            let with_rows = m.overall() + ROW_OVERHEAD * m.blocks as f64 / m.total_points() as f64;
            println!(
                "| {} | {label} | {} | {:.3} | {with_rows:.3} | {:.1} | {:.1} | {:.1} |",
                layout.name,
                kinds.join(" | "),
                m.overall(),
                m.total_points() as f64 / m.encode_s / 1e6,
                m.numeric_points() as f64 / m.decode_numeric_s / 1e6,
                m.points[5] as f64 / m.decode_text_s / 1e6,
            );
            if std::ptr::eq(layout, &svc) {
                by_size.push((size, label, m));
            }
        }
    }

    println!(
        "\nA year chart of one 1 Hz tag with svc's layout: {YEAR_POINTS} points in {CHART_BUCKETS} \
         buckets. Blocks wholly inside a bucket are read as summary rows; about one block per \
         bucket edge straddles it and is decoded whole: as values (`decode`) or as numeric \
         readings only (`decode_readings`, what an aggregate needs), at a walk's rate.\n"
    );
    println!(
        "| block | summary rows | read rows (SQLite, in memory) ms | decode straddlers: values ms | readings ms | chart ms (rows + readings) | walk bytes/pt + row | readings ms, format 1 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let format_1 = Settings {
        decimal: false,
        ..Settings::default()
    };
    for (size, label, m) in &by_size {
        let rows = (YEAR_POINTS as usize).div_ceil(*size);
        let blob = (m.per_point(0) * *size as f64) as usize;
        let scan_ms = summary_scan_s(rows, blob) * 1e3;
        let decoded = CHART_BUCKETS.min(rows as i64) as f64 * *size as f64;
        let settings = Settings::default();
        let [values_ms, readings_ms] = [false, true]
            .map(|readings| decoded / walk_decode_rate(&series, *size, readings, &settings) * 1e3);
        let format_1_ms = decoded / walk_decode_rate(&series, *size, true, &format_1) * 1e3;
        println!(
            "| {label} | {rows} | {scan_ms:.1} | {values_ms:.1} | {readings_ms:.1} | {:.1} | {:.3} | {format_1_ms:.1} |",
            scan_ms + readings_ms,
            m.per_point(0) + ROW_OVERHEAD / *size as f64,
        );
    }
    println!("\n- load average (1, 5, 15 min) after: {}", load_average());
}

/// `--edges`: what a year chart's bucket edges decode before and after decimal floats and the
/// end of the 1,850-byte fit (walk blocks of about 3,300 points in format 1, against 4,096 in
/// format 2), five interleaved rounds, the best of each.
fn edge_decoding(series: &[(Kind, Vec<BlockPoint>)]) {
    let format_1 = Settings {
        decimal: false,
        ..Settings::default()
    };
    let cases = [
        ("format 1, 3,300 points", 3_300, &format_1),
        ("format 2, 3,300 points", 3_300, &Settings::default()),
        ("format 1, 4,096 points", 4_096, &format_1),
        ("format 2, 4,096 points", 4_096, &Settings::default()),
    ];
    let mut best = [f64::MAX; 4];
    for _ in 0..5 {
        for (i, (_, size, settings)) in cases.iter().enumerate() {
            let per_edge_ms = *size as f64 / walk_decode_rate(series, *size, true, settings) * 1e3;
            best[i] = best[i].min(per_edge_ms * CHART_BUCKETS as f64);
        }
    }
    println!("| walk blocks | 500 straddling blocks as readings, ms |\n|---|---|");
    for ((name, _, _), ms) in cases.iter().zip(best) {
        println!("| {name} | {ms:.1} |");
    }
}

/// Walk points decoded per second (best of three passes), as values or as readings only, from
/// blocks written with `settings`.
fn walk_decode_rate(
    series: &[(Kind, Vec<BlockPoint>)],
    size: usize,
    readings: bool,
    settings: &Settings,
) -> f64 {
    let walks = series.iter().filter(|(kind, _)| *kind == Kind::Walk);
    let blocks: Vec<Vec<u8>> = walks
        .flat_map(|(_, points)| points.chunks(size))
        .map(|chunk| encode_with(chunk, settings).expect("encodes"))
        .collect();
    let points: usize = series
        .iter()
        .filter(|(kind, _)| *kind == Kind::Walk)
        .map(|(_, p)| p.len())
        .sum();
    let best = (0..3)
        .map(|_| {
            let started = Instant::now();
            for block in &blocks {
                if readings {
                    black_box(decode_readings(black_box(block)).expect("decodes"));
                } else {
                    black_box(decode(black_box(block)).expect("decodes"));
                }
            }
            started.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min);
    points as f64 / best
}
