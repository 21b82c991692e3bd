-- The audit trail: one row per successful administrative change.
CREATE TABLE audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, time text NOT NULL,
    domain text NOT NULL, user_id text NOT NULL, username text NOT NULL, via text NOT NULL,
    action text NOT NULL, resource_type text NOT NULL, resource_id text NOT NULL,
    summary text NOT NULL, correlation_id text NOT NULL);
CREATE INDEX audit_log_time ON audit_log (time);
CREATE INDEX audit_log_domain_time ON audit_log (domain, time);
