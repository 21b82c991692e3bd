-- What functions and flows leave behind: every version of a function's code, and the log of
-- runs (kept to the newest RUNS_KEPT per function or flow).
CREATE TABLE fn_versions (
    domain text NOT NULL, name text NOT NULL, version bigint NOT NULL, language text NOT NULL,
    module boolean NOT NULL, code text NOT NULL, modules text NOT NULL, created_dt text NOT NULL,
    PRIMARY KEY (domain, name, version));
CREATE TABLE fn_runs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, domain text NOT NULL,
    kind text NOT NULL, name text NOT NULL, started_dt text NOT NULL, trigger text NOT NULL,
    duration_ms bigint NOT NULL, success boolean NOT NULL, error text, logs text NOT NULL,
    output text);
CREATE INDEX fn_runs_by_name ON fn_runs (domain, kind, name, id);
