-- Identity of the built-in svc_admin domain: domains, users, groups with their grants, custom
-- actions and scopes per domain, and API keys (stored only as hashes).
CREATE TABLE auth_domains (
    name text PRIMARY KEY, created_dt text NOT NULL);
INSERT INTO auth_domains (name, created_dt)
    VALUES ('svc_admin', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
CREATE TABLE auth_users (
    key text PRIMARY KEY, username text NOT NULL UNIQUE, password_hash text NOT NULL,
    admin boolean NOT NULL, created_dt text NOT NULL, profile text);
CREATE TABLE auth_groups (
    domain text NOT NULL, key text NOT NULL, name text NOT NULL, grants text NOT NULL,
    created_dt text NOT NULL, PRIMARY KEY (domain, key), UNIQUE (domain, name));
CREATE TABLE auth_group_members (
    domain text NOT NULL, group_key text NOT NULL, user_key text NOT NULL,
    PRIMARY KEY (domain, group_key, user_key));
CREATE INDEX auth_group_members_user ON auth_group_members (user_key, domain);
CREATE TABLE auth_actions (
    domain text NOT NULL, feature text NOT NULL, action text NOT NULL,
    PRIMARY KEY (domain, feature, action));
CREATE TABLE auth_scopes (
    domain text NOT NULL, scope text NOT NULL, PRIMARY KEY (domain, scope));
CREATE TABLE auth_api_keys (
    key text PRIMARY KEY, user_key text NOT NULL, name text NOT NULL, prefix text NOT NULL,
    secret_hash text NOT NULL UNIQUE, created_dt text NOT NULL, last_used_dt text);
CREATE INDEX auth_api_keys_user ON auth_api_keys (user_key);
