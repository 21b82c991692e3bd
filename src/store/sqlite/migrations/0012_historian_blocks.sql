-- Historian blocks (issue 33): a series' older points, closed into compressed columns
-- (`store::blocks`), with their summary in plain columns so aggregates over whole blocks read
-- no data. No block spans more than `blocks::MAX_SPAN_MS`, so the blocks overlapping a window
-- are found through (series, start_ts). Hot rows (`hist_points`) and blocks never hold the same
-- point: a block and the removal of the rows it replaces commit together.
CREATE TABLE IF NOT EXISTS hist_blocks (
    id INTEGER PRIMARY KEY,
    series INTEGER NOT NULL,
    start_ts INTEGER NOT NULL,
    end_ts INTEGER NOT NULL,
    count INTEGER NOT NULL,
    num_count INTEGER NOT NULL,
    min REAL,
    max REAL,
    sum REAL,
    first_seq INTEGER NOT NULL,
    first_value TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    last_value TEXT NOT NULL,
    data BLOB NOT NULL
);
-- Covering: the summaries a chart reads come from the index alone, never from the pages that
-- hold the blocks' data.
CREATE INDEX IF NOT EXISTS hist_blocks_summaries ON hist_blocks
    (series, start_ts, end_ts, count, num_count, min, max, sum, first_seq, last_seq, id);
