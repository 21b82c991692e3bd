-- The domain an API key was made in (the Domain header of its creation): topics it publishes
-- first, no namespace covering them and no domain owning them, become that domain's tags.
-- NULL for keys made in svc_admin and for every key made before this step.
ALTER TABLE auth_api_keys ADD COLUMN domain text;
