-- Connectors, as on SQLite: passwords (write-only through the API), svc's own OPC UA
-- application instance certificate (one row, shared by every instance on the database), and
-- each domain's server certificates with the administrator's decision.
CREATE TABLE connector_secrets (
    domain TEXT NOT NULL, connector TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, connector));
CREATE TABLE connector_identity (
    id INTEGER PRIMARY KEY CHECK (id = 1), certificate BYTEA NOT NULL, private_key BYTEA NOT NULL);
CREATE TABLE connector_certificates (
    domain TEXT NOT NULL, thumbprint TEXT NOT NULL, certificate BYTEA NOT NULL,
    state TEXT NOT NULL, first_seen_ms BIGINT NOT NULL,
    PRIMARY KEY (domain, thumbprint));
