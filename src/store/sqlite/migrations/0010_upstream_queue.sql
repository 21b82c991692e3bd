-- The outbox of upstream bridges: messages waiting for their upstream broker. The name holds no
-- `.`, so it is never taken for a domain's record table (`<domain>.<table>`). Sequence numbers
-- are unique across every queue and grow, so appends go to the end of the rowid tree and a
-- queue's messages are read back in order; a queue is found by scanning, which happens only
-- when an upstream starts. (`upstream_queue`, keyed by upstream and sequence, was its first
-- layout: never released.)
DROP TABLE IF EXISTS upstream_queue;
CREATE TABLE IF NOT EXISTS upstream_outbox (
    seq INTEGER PRIMARY KEY, upstream TEXT NOT NULL, topic TEXT NOT NULL, payload BLOB NOT NULL,
    qos INTEGER NOT NULL, retain INTEGER NOT NULL, hops INTEGER NOT NULL,
    enqueued_ms INTEGER NOT NULL, binding INTEGER NOT NULL);
