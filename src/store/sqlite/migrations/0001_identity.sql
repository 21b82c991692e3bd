-- Identity: domains (svc_admin always there), users, groups and their members, custom actions
-- and scopes, API keys (their secrets hashed).
CREATE TABLE IF NOT EXISTS auth_domains (
    name TEXT PRIMARY KEY NOT NULL, created_dt TEXT NOT NULL);
INSERT OR IGNORE INTO auth_domains (name, created_dt)
    VALUES ('svc_admin', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
CREATE TABLE IF NOT EXISTS auth_users (
    key TEXT PRIMARY KEY NOT NULL, username TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
    admin INTEGER NOT NULL, created_dt TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS auth_groups (
    domain TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, grants TEXT NOT NULL,
    created_dt TEXT NOT NULL, PRIMARY KEY (domain, key), UNIQUE (domain, name));
CREATE TABLE IF NOT EXISTS auth_group_members (
    domain TEXT NOT NULL, group_key TEXT NOT NULL, user_key TEXT NOT NULL,
    PRIMARY KEY (domain, group_key, user_key));
CREATE INDEX IF NOT EXISTS auth_group_members_user ON auth_group_members(user_key, domain);
CREATE TABLE IF NOT EXISTS auth_actions (
    domain TEXT NOT NULL, feature TEXT NOT NULL, action TEXT NOT NULL,
    PRIMARY KEY (domain, feature, action));
CREATE TABLE IF NOT EXISTS auth_scopes (
    domain TEXT NOT NULL, scope TEXT NOT NULL, PRIMARY KEY (domain, scope));
CREATE TABLE IF NOT EXISTS auth_api_keys (
    key TEXT PRIMARY KEY NOT NULL, user_key TEXT NOT NULL, name TEXT NOT NULL,
    prefix TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, created_dt TEXT NOT NULL,
    last_used_dt TEXT);
CREATE INDEX IF NOT EXISTS auth_api_keys_user ON auth_api_keys(user_key);
