-- The broker's durable state: retained messages, persistent sessions, their subscriptions and
-- queues, and QoS 2 packet ids in flight. The `mqtt_` names hold no `.`, so they are never
-- taken for a domain's record tables (`<domain>.<table>`).
CREATE TABLE IF NOT EXISTS mqtt_retained (
    topic TEXT PRIMARY KEY NOT NULL, payload BLOB NOT NULL, qos INTEGER NOT NULL,
    retain INTEGER NOT NULL, properties BLOB NOT NULL, received_ms INTEGER NOT NULL,
    expires_at_ms INTEGER);
CREATE TABLE IF NOT EXISTS mqtt_sessions (
    client_id TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL, expiry_secs INTEGER NOT NULL,
    disconnected_at_ms INTEGER);
CREATE TABLE IF NOT EXISTS mqtt_subscriptions (
    client_id TEXT NOT NULL, filter TEXT NOT NULL, options BLOB NOT NULL,
    PRIMARY KEY (client_id, filter)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mqtt_queue (
    client_id TEXT NOT NULL, seq INTEGER NOT NULL, packet_id INTEGER, state INTEGER NOT NULL,
    topic TEXT NOT NULL, payload BLOB NOT NULL, qos INTEGER NOT NULL, retain INTEGER NOT NULL,
    properties BLOB NOT NULL, received_ms INTEGER NOT NULL, expires_at_ms INTEGER,
    PRIMARY KEY (client_id, seq));
CREATE TABLE IF NOT EXISTS mqtt_inbound_qos2 (
    client_id TEXT NOT NULL, packet_id INTEGER NOT NULL,
    PRIMARY KEY (client_id, packet_id)) WITHOUT ROWID;
