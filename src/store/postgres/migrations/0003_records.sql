-- Records live in one schema per domain (d_<domain>), created with their tables. These
-- functions give filters SQLite's meaning (see src/store/postgres/filter_sql.rs); all are
-- IMMUTABLE so expression indexes may use them.

-- A JSON member's text: a string's content, a number's or boolean's literal, an object's or
-- array's JSON; NULL for null.
CREATE FUNCTION svc_text(j jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(j)
        WHEN 'object' THEN j::text WHEN 'array' THEN j::text WHEN 'null' THEN NULL
        ELSE j #>> '{}' END
$$;

-- A JSON member as a number: numbers, and booleans as 0 and 1 (as SQLite's json_extract).
CREATE FUNCTION svc_num(j jsonb) RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(j)
        WHEN 'number' THEN (j #>> '{}')::float8
        WHEN 'boolean' THEN CASE WHEN j = 'true'::jsonb THEN 1 ELSE 0 END END
$$;

-- A text as a time, when it is an ISO 8601 date or date-time (zone-less means UTC, as in
-- SQLite's julianday); NULL otherwise.
CREATE FUNCTION svc_time(t text) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET timezone = 'UTC' AS $$
BEGIN
    IF t IS NULL OR t !~ '^\d{4}-\d{2}-\d{2}' THEN
        RETURN NULL;
    END IF;
    RETURN t::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

-- The distinct lower-case words of a text (maximal runs of letters and digits), as the
-- full-text filter compares them.
CREATE FUNCTION svc_words(t text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT w), '{}')
    FROM regexp_split_to_table(lower(coalesce(t, '')), '[^[:alnum:]]+') AS w
    WHERE w <> ''
$$;

-- Upstream passwords, kept out of the upstream records.
CREATE TABLE upstream_secrets (
    domain text NOT NULL, upstream text NOT NULL, password text NOT NULL,
    PRIMARY KEY (domain, upstream));
