-- Undoes 0001_init.up.sql.
DROP TABLE IF EXISTS canvas_agent_todos;
DROP TABLE IF EXISTS canvas_agent_sessions;
DROP TABLE IF EXISTS tokens;
DROP TABLE IF EXISTS named_snapshots;
DROP TABLE IF EXISTS idempotency;
DROP TABLE IF EXISTS state_snapshots;
DROP TABLE IF EXISTS commits;
DROP TABLE IF EXISTS canvases;
