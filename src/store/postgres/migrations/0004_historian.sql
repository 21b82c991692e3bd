-- The historian. Series name each (domain, topic) once. Points are partitioned by time: one
-- partition per UTC day, created ahead of the values that need them (src/store/postgres/
-- historian.rs) and dropped whole by retention. `ts` (epoch milliseconds) leads no key but is
-- part of the primary key, as partitioning requires; the layout works unchanged as a
-- TimescaleDB hypertable on `ts` or as a Citus table distributed by `series`.
CREATE TABLE hist_series (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    domain text NOT NULL, topic text NOT NULL, UNIQUE (domain, topic));
CREATE TABLE hist_points (
    series bigint NOT NULL, ts bigint NOT NULL, seq integer NOT NULL,
    num double precision, value text NOT NULL,
    PRIMARY KEY (series, ts, seq)) PARTITION BY RANGE (ts);
-- How far each instance's journal has been folded into the points (see hist_journal in the
-- SQLite engine); one row per instance, keyed by the instance's id.
CREATE TABLE hist_journal (instance text PRIMARY KEY, folded bigint NOT NULL);
