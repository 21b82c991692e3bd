-- What instances sharing this database share beyond the data: the JWT signing secret (when none
-- is configured), and a notification on every change of identity, so each instance drops what
-- it cached of users, keys and grants at once (channel svc_identity).
CREATE TABLE svc_secrets (name text PRIMARY KEY, value bytea NOT NULL);

CREATE FUNCTION svc_notify_identity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('svc_identity', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_domains
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_users
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_groups
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_group_members
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_actions
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_scopes
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
-- Not on every `last_used_dt` touch: only when a key appears, goes or changes hands.
CREATE TRIGGER svc_identity AFTER INSERT OR DELETE OR TRUNCATE ON auth_api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
CREATE TRIGGER svc_identity_keys AFTER UPDATE OF secret_hash, user_key ON auth_api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_identity();
