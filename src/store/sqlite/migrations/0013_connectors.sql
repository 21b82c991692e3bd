-- Connectors: passwords (write-only through the API), svc's own OPC UA application instance
-- certificate (one row), and each domain's server certificates with the administrator's
-- decision (`pending`, `trusted`, `rejected`). No name holds a `.`, so none is ever taken
-- for a domain's record table.
CREATE TABLE IF NOT EXISTS connector_secrets (
    domain TEXT NOT NULL, connector TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, connector));
CREATE TABLE IF NOT EXISTS connector_identity (
    id INTEGER PRIMARY KEY CHECK (id = 1), certificate BLOB NOT NULL, private_key BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS connector_certificates (
    domain TEXT NOT NULL, thumbprint TEXT NOT NULL, certificate BLOB NOT NULL,
    state TEXT NOT NULL, first_seen_ms INTEGER NOT NULL,
    PRIMARY KEY (domain, thumbprint));
