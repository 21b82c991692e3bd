-- How far the historian journal has been folded into the points (one row).
CREATE TABLE IF NOT EXISTS hist_journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    folded INTEGER NOT NULL
);
