-- A JSON member as an exact number for reports: numbers keep their written scale (999 stays an
-- integer, 20.0 keeps its fraction, as SQLite's json_extract returns INTEGER or REAL),
-- booleans are 1 and 0; anything else is NULL.
CREATE FUNCTION svc_number(j jsonb) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(j)
        WHEN 'number' THEN (j #>> '{}')::numeric
        WHEN 'boolean' THEN CASE WHEN j = 'true'::jsonb THEN 1 ELSE 0 END END
$$;
