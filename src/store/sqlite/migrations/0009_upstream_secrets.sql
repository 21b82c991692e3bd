-- Upstream bridges' passwords (write-only through the API). The name holds no `.`, so it is
-- never taken for a domain's record table (`<domain>.<table>`).
CREATE TABLE IF NOT EXISTS upstream_secrets (
    domain TEXT NOT NULL, upstream TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, upstream));
