-- The audit trail of changes made through the API.
CREATE TABLE IF NOT EXISTS audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, domain TEXT NOT NULL,
    user_id TEXT NOT NULL, username TEXT NOT NULL, via TEXT NOT NULL, action TEXT NOT NULL,
    resource_type TEXT NOT NULL, resource_id TEXT NOT NULL, summary TEXT NOT NULL,
    correlation_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_log_time ON audit_log(time);
CREATE INDEX IF NOT EXISTS audit_log_domain_time ON audit_log(domain, time);
