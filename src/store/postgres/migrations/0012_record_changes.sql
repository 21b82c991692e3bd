-- Word of every change to a record table, so each instance drops what it cached of that table
-- (src/store/postgres/records.rs): a statement trigger on each record table (added by
-- ensure_table to the tables made from now on, and here to those made before) raises
-- `NOTIFY svc_records, '<schema>.<table>'`, whoever wrote.
CREATE FUNCTION svc_notify_records() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('svc_records', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'r' AND n.nspname LIKE 'd\_%'
    LOOP
        EXECUTE format(
            'CREATE TRIGGER svc_records AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I.%I '
            'FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_records()', t.nspname, t.relname);
    END LOOP;
END
$$;
