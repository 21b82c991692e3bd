-- Historian blocks (issue 33), as on SQLite: a series' older points closed into compressed
-- columns with their summary in plain columns. Partitioned by the block's start in periods of
-- 28 days (`hist_blocks_pYYYYMMDD`, created as blocks need them, dropped whole by retention);
-- no block spans more than `blocks::MAX_SPAN_MS`. The layout works as a TimescaleDB hypertable
-- on `start_ts` or a Citus table distributed by `series`.
ALTER TABLE hist_points ADD COLUMN IF NOT EXISTS quality bigint NOT NULL DEFAULT 0;
ALTER TABLE hist_series ADD COLUMN IF NOT EXISTS sealed_upto bigint;
CREATE SEQUENCE IF NOT EXISTS hist_blocks_id;
CREATE TABLE IF NOT EXISTS hist_blocks (
    id bigint NOT NULL DEFAULT nextval('hist_blocks_id'),
    series bigint NOT NULL, start_ts bigint NOT NULL, end_ts bigint NOT NULL,
    count bigint NOT NULL, num_count bigint NOT NULL,
    min double precision, max double precision, sum double precision,
    first_seq bigint NOT NULL, first_value text NOT NULL,
    last_seq bigint NOT NULL, last_value text NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (series, start_ts, id)) PARTITION BY RANGE (start_ts);
ALTER SEQUENCE hist_blocks_id OWNED BY hist_blocks.id;
-- The summaries a chart reads come from this index (an index-only scan once vacuumed).
CREATE INDEX IF NOT EXISTS hist_blocks_summaries ON hist_blocks (series, start_ts)
    INCLUDE (end_ts, count, num_count, min, max, sum, first_seq, last_seq, id);
