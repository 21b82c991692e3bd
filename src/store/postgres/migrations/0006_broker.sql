-- The broker's durable state: retained messages and persistent sessions with their
-- subscriptions, queues and inbound QoS 2 ids. Each instance runs its own broker, so each
-- keeps its own state, keyed by the instance's id.
CREATE TABLE mqtt_retained (
    instance text NOT NULL, topic text NOT NULL, payload bytea NOT NULL, qos smallint NOT NULL,
    retain boolean NOT NULL, properties bytea NOT NULL, received_ms bigint NOT NULL,
    expires_at_ms bigint, PRIMARY KEY (instance, topic));
CREATE TABLE mqtt_sessions (
    instance text NOT NULL, client_id text NOT NULL, owner text NOT NULL,
    expiry_secs bigint NOT NULL, disconnected_at_ms bigint, PRIMARY KEY (instance, client_id));
CREATE TABLE mqtt_subscriptions (
    instance text NOT NULL, client_id text NOT NULL, filter text NOT NULL,
    options bytea NOT NULL, PRIMARY KEY (instance, client_id, filter));
CREATE TABLE mqtt_queue (
    instance text NOT NULL, client_id text NOT NULL, seq bigint NOT NULL, packet_id integer,
    state smallint NOT NULL, topic text NOT NULL, payload bytea NOT NULL, qos smallint NOT NULL,
    retain boolean NOT NULL, properties bytea NOT NULL, received_ms bigint NOT NULL,
    expires_at_ms bigint, PRIMARY KEY (instance, client_id, seq));
CREATE TABLE mqtt_inbound_qos2 (
    instance text NOT NULL, client_id text NOT NULL, packet_id integer NOT NULL,
    PRIMARY KEY (instance, client_id, packet_id));
