-- Functions and flows: the versions of their code, and the log of their runs.
CREATE TABLE IF NOT EXISTS fn_versions (
    domain TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    language TEXT NOT NULL,
    module INTEGER NOT NULL,
    code TEXT NOT NULL,
    modules TEXT NOT NULL,
    created_dt TEXT NOT NULL,
    PRIMARY KEY (domain, name, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fn_runs (
    id INTEGER PRIMARY KEY,
    domain TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    started_dt TEXT NOT NULL,
    trigger TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    success INTEGER NOT NULL,
    error TEXT,
    logs TEXT NOT NULL,
    output TEXT
);
CREATE INDEX IF NOT EXISTS fn_runs_by_name ON fn_runs (domain, kind, name, id);
