-- canvasd schema, SQLite dialect, version 6: tokens may expire. expires_at is
-- Unix microseconds (NULL: the token never expires); expired tokens are
-- refused at once and deleted by the next prune (store.Store.PruneTokens).
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
CREATE INDEX tokens_expires_idx ON tokens (expires_at) WHERE expires_at IS NOT NULL;
