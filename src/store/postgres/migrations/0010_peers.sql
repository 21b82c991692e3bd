-- What instances on this database tell each other (messages published on one for the
-- subscribers of the others, word of a changed system table): each notice is a row, announced
-- by `NOTIFY svc_peers` with its id and sender, so a body is never bound by NOTIFY's 8000 bytes.
-- Rows are kept for a minute, long enough for every listener to fetch them.
CREATE TABLE svc_peer_notices (
    id bigserial PRIMARY KEY,
    instance text NOT NULL,
    kind text NOT NULL,
    body bytea NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX svc_peer_notices_at ON svc_peer_notices (at);

-- The instances alive on this database: each raises its `seen_at` every second, so an instance
-- alone skips telling anyone, and the rest know who is there.
CREATE TABLE svc_instances (
    instance text PRIMARY KEY,
    seen_at timestamptz NOT NULL DEFAULT now()
);
