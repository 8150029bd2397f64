-- Undoes 0005_token_expiry.up.sql.
DROP INDEX IF EXISTS tokens_expires_idx;
ALTER TABLE tokens DROP COLUMN IF EXISTS expires_at;
