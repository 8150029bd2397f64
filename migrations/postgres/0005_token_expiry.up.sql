-- canvasd schema, PostgreSQL dialect, version 5: tokens may expire (NULL:
-- never); expired tokens are refused at once and deleted by the next prune
-- (store.Store.PruneTokens).
ALTER TABLE tokens ADD COLUMN expires_at timestamptz;
CREATE INDEX tokens_expires_idx ON tokens (expires_at) WHERE expires_at IS NOT NULL;
