-- How far `svc migrate` got with each table it copies from an SQLite store (src/store/postgres/
-- import.rs): each batch commits with its row here, so an interrupted migration resumes after
-- its last batch. Kept afterwards as the record of the migration; svc serve never reads it.
CREATE TABLE svc_migrate_progress (
    item text PRIMARY KEY,
    last_key jsonb,
    copied bigint NOT NULL DEFAULT 0,
    done boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now()
);
