-- Alarms, as on SQLite: the journal of every state change, each alarm's state (JSON, shared by
-- the instances so a new leader carries on), and the notifications waiting to be delivered.
CREATE TABLE alarm_journal (
    id BIGSERIAL PRIMARY KEY,
    domain TEXT NOT NULL, alarm TEXT NOT NULL, state TEXT NOT NULL, previous TEXT NOT NULL,
    cause TEXT NOT NULL, priority TEXT NOT NULL, tag TEXT NOT NULL, value TEXT NOT NULL,
    message TEXT NOT NULL, at_ms BIGINT NOT NULL, who TEXT, comment TEXT);
CREATE INDEX alarm_journal_domain ON alarm_journal (domain, id);
CREATE INDEX alarm_journal_at ON alarm_journal (at_ms);
CREATE TABLE alarm_states (
    domain TEXT NOT NULL, alarm TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (domain, alarm));
CREATE TABLE alarm_notification_queue (
    id BIGINT PRIMARY KEY, domain TEXT NOT NULL, pipeline TEXT NOT NULL,
    channel TEXT NOT NULL, body TEXT NOT NULL, attempts BIGINT NOT NULL,
    due_ms BIGINT NOT NULL);
-- The write-only SMTP passwords of the domains' notification pipelines.
CREATE TABLE alarm_notification_secrets (
    domain TEXT NOT NULL, pipeline TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, pipeline));
