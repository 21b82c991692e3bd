-- The historian: series name each (domain, topic) once; points keyed by (series, ts, seq).
CREATE TABLE IF NOT EXISTS hist_series (
    id INTEGER PRIMARY KEY,
    domain TEXT NOT NULL,
    topic TEXT NOT NULL,
    UNIQUE (domain, topic)
);
CREATE TABLE IF NOT EXISTS hist_points (
    series INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    num REAL,
    value TEXT NOT NULL,
    PRIMARY KEY (series, ts, seq)
) WITHOUT ROWID;
