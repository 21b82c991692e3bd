//! The historian's journal: a value whose publisher waits for "stored" is appended to a file
//! with one `write`, and acknowledged once it returns. That is the guarantee every SQLite commit
//! of svc gives too (WAL with `synchronous=NORMAL`: the bytes are in the operating system's page
//! cache, so a killed process loses nothing; power loss is the disk's business), at the cost of
//! one system call instead of a transaction's locks, page writes and checksums.
//!
//! Entries are JSON lines `[seq, domain, topic, ts_ms, value]`, with the quality's StatusCode as
//! a sixth element when it is not good, whose sequence number only grows.
//! Files are `<base>.<generation>`: when the writer takes values to fold, the journal moves on
//! to a new file; once the fold (which raises the store's mark to the last folded `seq` in the
//! same transaction) commits, the old file is removed. At start every file is read, entries
//! above the mark are replayed, and the files go once the replay is folded. A line torn by a
//! failed write is cut off before the next append, so it never swallows the entry after it.

use crate::store::{HistoryWrite, Quality};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

pub struct Journal {
    base: PathBuf,
    generation: u64,
    file: File,
    /// Bytes of whole entries in the current file.
    len: u64,
    next_seq: u64,
    buf: Vec<u8>,
}

/// Journal files whose entries are being folded; removed once the fold commits.
#[derive(Debug, Default)]
pub struct Retired {
    paths: Vec<PathBuf>,
}

/// What a start found in the journal.
pub struct Replay {
    /// Entries above the mark, oldest first.
    pub values: Vec<HistoryWrite>,
    /// The sequence number of the last of them.
    pub last_seq: Option<u64>,
    /// The files read, to remove once `values` are folded.
    pub retired: Option<Retired>,
}

/// An entry as written: borrowed from the value being journaled.
type EntryRef<'a> = (u64, &'a str, &'a str, i64, &'a Value);
/// An entry of a point that is not good, as written.
type QualifiedEntryRef<'a> = (u64, &'a str, &'a str, i64, &'a Value, u32);

/// An entry as read back (the quality absent from good points and older journals).
#[derive(serde::Deserialize)]
struct Entry(u64, String, String, i64, Value, #[serde(default)] u32);

/// How many entries of the journal files of `base` lie above the mark `folded` (values
/// acknowledged but not yet in their series), reading the files without creating or removing
/// any: `svc migrate` refuses a data dir whose journal still holds some.
pub fn unfolded(base: &Path, folded: u64) -> io::Result<usize> {
    let mut count = 0;
    for (_, path) in generations(base)? {
        count += read_entries(&path)?
            .iter()
            .filter(|entry| entry.0 > folded)
            .count();
    }
    Ok(count)
}

impl Journal {
    /// Reads every journal file of `base` and opens a new one after them.
    pub fn open(base: &Path, folded: u64) -> io::Result<(Journal, Replay)> {
        let files = generations(base)?;
        let mut values = Vec::new();
        let mut last_seq = None;
        let mut max_seq = folded;
        for (_, path) in &files {
            for Entry(seq, domain, topic, ts_ms, value, quality) in read_entries(path)? {
                max_seq = max_seq.max(seq);
                if seq > folded {
                    last_seq = Some(seq);
                    values.push(HistoryWrite {
                        domain,
                        topic,
                        ts_ms,
                        value,
                        quality: Quality(quality),
                    });
                }
            }
        }
        let generation = files.last().map_or(0, |(g, _)| g + 1);
        let journal = Journal {
            file: create(&file_name(base, generation))?,
            base: base.to_owned(),
            generation,
            len: 0,
            next_seq: max_seq + 1,
            buf: Vec::new(),
        };
        let retired = (!files.is_empty()).then(|| Retired {
            paths: files.into_iter().map(|(_, p)| p).collect(),
        });
        Ok((
            journal,
            Replay {
                values,
                last_seq,
                retired,
            },
        ))
    }

    /// Appends a batch with one write; returns the sequence number of its last entry. On
    /// failure the file is cut back to its previous length.
    pub fn append(&mut self, batch: &[HistoryWrite]) -> io::Result<u64> {
        self.buf.clear();
        let mut seq = self.next_seq;
        for write in batch {
            let (domain, topic, ts) = (write.domain.as_str(), write.topic.as_str(), write.ts_ms);
            if write.quality == Quality::GOOD {
                let entry: EntryRef<'_> = (seq, domain, topic, ts, &write.value);
                serde_json::to_writer(&mut self.buf, &entry)?;
            } else {
                let entry: QualifiedEntryRef<'_> =
                    (seq, domain, topic, ts, &write.value, write.quality.0);
                serde_json::to_writer(&mut self.buf, &entry)?;
            }
            self.buf.push(b'\n');
            seq += 1;
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            // Whatever part was written would merge with the next entry; cut it off.
            let _ = self.file.set_len(self.len);
            return Err(e);
        }
        self.len += self.buf.len() as u64;
        self.next_seq = seq;
        Ok(seq - 1)
    }

    /// Moves on to a new file; the old one (if it holds entries) is returned for removal.
    pub fn rotate(&mut self) -> io::Result<Option<Retired>> {
        if self.len == 0 {
            return Ok(None);
        }
        let next = self.next_generation().create()?;
        Ok(self.rotate_to(next))
    }

    /// The file the next rotation moves to. The writer thread reads it under the writers'
    /// lock and creates it outside, so publishers never wait on a file creation.
    pub fn next_generation(&self) -> NextGeneration {
        let generation = self.generation + 1;
        NextGeneration {
            path: file_name(&self.base, generation),
            generation,
        }
    }

    /// [`Journal::rotate`] to a file created ahead: no system call. `next` must be this
    /// journal's [`Journal::next_generation`], created; when the current file is empty it is
    /// not needed and stays unused.
    pub fn rotate_to(&mut self, next: NextFile) -> Option<Retired> {
        if self.len == 0 || next.generation != self.generation + 1 {
            return None;
        }
        let old = file_name(&self.base, self.generation);
        self.file = next.file;
        self.generation = next.generation;
        self.len = 0;
        Some(Retired { paths: vec![old] })
    }
}

/// Where the journal's next file goes.
pub struct NextGeneration {
    path: PathBuf,
    generation: u64,
}

/// The journal's next file, created ahead of its rotation.
pub struct NextFile {
    file: File,
    generation: u64,
}

impl NextGeneration {
    pub fn create(self) -> io::Result<NextFile> {
        Ok(NextFile {
            file: create(&self.path)?,
            generation: self.generation,
        })
    }
}

impl Retired {
    /// Both sets of files, as one.
    pub fn merge(a: Option<Retired>, b: Option<Retired>) -> Option<Retired> {
        match (a, b) {
            (Some(mut a), Some(b)) => {
                a.paths.extend(b.paths);
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }

    /// Removes the files (their entries are folded).
    pub fn remove(self) {
        for path in self.paths {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(journal = %path.display(), error = %e, "could not remove a folded historian journal file");
            }
        }
    }
}

fn file_name(base: &Path, generation: u64) -> PathBuf {
    let mut name = base.as_os_str().to_owned();
    name.push(format!(".{generation}"));
    name.into()
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The journal files of `base`, oldest generation first.
fn generations(base: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(
        "{}.",
        base.file_name().unwrap_or_default().to_string_lossy()
    );
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let generation = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|g| g.parse::<u64>().ok());
        if let Some(generation) = generation {
            files.push((generation, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// Every whole, readable entry of one file; a torn last line was never acknowledged.
fn read_entries(path: &Path) -> io::Result<Vec<Entry>> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut entries = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 || line.last() != Some(&b'\n') {
            return Ok(entries);
        }
        match serde_json::from_slice::<Entry>(&line) {
            Ok(entry) => entries.push(entry),
            Err(e) => tracing::warn!(
                journal = %path.display(), error = %e,
                "skipping an unreadable historian journal entry"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(ts_ms: i64) -> HistoryWrite {
        HistoryWrite {
            domain: "d".into(),
            topic: "a/b".into(),
            ts_ms,
            value: json!({"v": ts_ms, "s": "x\ny"}),
            quality: Quality(ts_ms as u32 % 3 * 0x4000_0000),
        }
    }

    #[test]
    fn unfolded_counts_the_entries_above_the_mark_and_touches_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("j");
        assert_eq!(unfolded(&base, 0).unwrap(), 0, "no journal yet");
        let (mut journal, _) = Journal::open(&base, 0).unwrap();
        journal.append(&[write(1), write(2), write(3)]).unwrap();
        drop(journal);
        let files = || std::fs::read_dir(dir.path()).unwrap().count();
        let before = files();
        assert_eq!(unfolded(&base, 0).unwrap(), 3);
        assert_eq!(unfolded(&base, 2).unwrap(), 1);
        assert_eq!(unfolded(&base, 3).unwrap(), 0);
        assert_eq!(files(), before);
    }

    #[test]
    fn entries_above_the_mark_are_replayed_in_order_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("j");
        let (mut journal, replay) = Journal::open(&base, 0).unwrap();
        assert!(replay.values.is_empty() && replay.retired.is_none());
        assert_eq!(journal.append(&[write(1), write(2)]).unwrap(), 2);
        assert!(journal.rotate().unwrap().is_some());
        assert!(journal.rotate().unwrap().is_none(), "an empty file stays");
        assert_eq!(journal.append(&[write(3)]).unwrap(), 3);
        drop(journal);

        let (mut journal, replay) = Journal::open(&base, 1).unwrap();
        assert_eq!(replay.values, [write(2), write(3)]);
        assert_eq!(replay.last_seq, Some(3));
        assert_eq!(journal.append(&[write(4)]).unwrap(), 4);
        replay.retired.unwrap().remove();
        drop(journal);
        let (_, replay) = Journal::open(&base, 3).unwrap();
        assert_eq!(replay.values, [write(4)], "only the newest file is left");
    }

    #[test]
    fn a_file_created_ahead_takes_the_next_entries_and_an_unused_one_is_harmless() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("j");
        let (mut journal, _) = Journal::open(&base, 0).unwrap();
        let ahead = journal.next_generation().create().unwrap();
        assert!(
            journal.rotate_to(ahead).is_none(),
            "an empty file is not rotated"
        );
        journal.append(&[write(1)]).unwrap();
        let ahead = journal.next_generation().create().unwrap();
        let stale = journal.next_generation().create().unwrap();
        let retired = journal
            .rotate_to(ahead)
            .expect("the file with entries is retired");
        assert!(
            journal.rotate_to(stale).is_none(),
            "a file made for another generation"
        );
        journal.append(&[write(2)]).unwrap();
        drop(journal);

        let (_, replay) = Journal::open(&base, 0).unwrap();
        assert_eq!(replay.values, [write(1), write(2)]);
        retired.remove();
        let (_, replay) = Journal::open(&base, 0).unwrap();
        assert_eq!(
            replay.values,
            [write(2)],
            "entries went to the file created ahead"
        );
    }

    #[test]
    fn a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("j");
        let (mut journal, _) = Journal::open(&base, 0).unwrap();
        journal.append(&[write(1)]).unwrap();
        drop(journal);
        let mut file = OpenOptions::new()
            .append(true)
            .open(file_name(&base, 0))
            .unwrap();
        file.write_all(b"[2,\"d\",\"a/b\",2,").unwrap();
        drop(file);

        let (mut journal, replay) = Journal::open(&base, 0).unwrap();
        assert_eq!(replay.values, [write(1)]);
        assert_eq!(journal.append(&[write(5)]).unwrap(), 2);
        drop(journal);
        let (_, replay) = Journal::open(&base, 0).unwrap();
        assert_eq!(replay.values, [write(1), write(5)]);
    }

    #[test]
    fn numbering_continues_above_the_mark_when_the_files_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (mut journal, _) = Journal::open(&dir.path().join("j"), 40).unwrap();
        assert_eq!(journal.append(&[write(9)]).unwrap(), 41);
    }
}
