-- Alarms: the journal of every state change, each alarm's state (JSON, so it survives a
-- restart), and the notifications waiting to be delivered.
CREATE TABLE IF NOT EXISTS alarm_journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    domain TEXT NOT NULL, alarm TEXT NOT NULL, state TEXT NOT NULL, previous TEXT NOT NULL,
    cause TEXT NOT NULL, priority TEXT NOT NULL, tag TEXT NOT NULL, value TEXT NOT NULL,
    message TEXT NOT NULL, at_ms INTEGER NOT NULL, who TEXT, comment TEXT);
CREATE INDEX IF NOT EXISTS alarm_journal_domain ON alarm_journal (domain, id);
CREATE INDEX IF NOT EXISTS alarm_journal_at ON alarm_journal (at_ms);
CREATE TABLE IF NOT EXISTS alarm_states (
    domain TEXT NOT NULL, alarm TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (domain, alarm));
CREATE TABLE IF NOT EXISTS alarm_notification_queue (
    id INTEGER PRIMARY KEY, domain TEXT NOT NULL, pipeline TEXT NOT NULL,
    channel TEXT NOT NULL, body TEXT NOT NULL, attempts INTEGER NOT NULL,
    due_ms INTEGER NOT NULL);
-- The write-only SMTP passwords of the domains' notification pipelines.
CREATE TABLE IF NOT EXISTS alarm_notification_secrets (
    domain TEXT NOT NULL, pipeline TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, pipeline));
