-- Undoes 0006_token_expiry.up.sql.
DROP INDEX IF EXISTS tokens_expires_idx;
ALTER TABLE tokens DROP COLUMN expires_at;
