-- Each instance's outbox of messages on their way to upstream brokers: the messages that
-- instance received, so its own sequence numbers key them.
CREATE TABLE upstream_outbox (
    instance text NOT NULL, seq bigint NOT NULL, upstream text NOT NULL, topic text NOT NULL,
    payload bytea NOT NULL, qos smallint NOT NULL, retain boolean NOT NULL, hops smallint NOT NULL,
    enqueued_ms bigint NOT NULL, binding bigint NOT NULL, PRIMARY KEY (instance, seq));
CREATE INDEX upstream_outbox_upstream ON upstream_outbox (instance, upstream, seq);
