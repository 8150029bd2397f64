-- canvasd schema, SQLite dialect, version 1.
--
-- Conventions (the sqlitestore code relies on them):
--   * timestamps are INTEGER Unix microseconds, UTC;
--   * JSON is stored as TEXT (commits.args, commits.changes, tokens.canvases, ...);
--   * every row that belongs to a canvas goes away with it (ON DELETE CASCADE;
--     the store runs with PRAGMA foreign_keys = ON).

CREATE TABLE canvases (
	id         TEXT    NOT NULL PRIMARY KEY,
	title      TEXT    NOT NULL DEFAULT '',
	head_rev   INTEGER NOT NULL DEFAULT 0 CHECK (head_rev >= 0),
	created_at INTEGER NOT NULL,
	created_by TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX canvases_created_idx ON canvases (created_at, id);

-- The event log: one row per revision, gap-free per canvas. A rowid table
-- (rows stored in insertion order, so a transaction carrying commits of many
-- canvases dirties few pages) with a unique (canvas_id, rev) index for reads.
CREATE TABLE commits (
	seq        INTEGER PRIMARY KEY,
	canvas_id  TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	rev        INTEGER NOT NULL CHECK (rev > 0),
	event_id   TEXT    NOT NULL,
	cmd_id     TEXT    NOT NULL DEFAULT '',
	type       TEXT    NOT NULL,
	args       TEXT,                          -- JSON object (NULL: none)
	actor_id   TEXT    NOT NULL,
	actor_type TEXT    NOT NULL,
	ts         INTEGER NOT NULL,
	changes    TEXT    NOT NULL DEFAULT '[]'  -- JSON array of canvas.Change
) STRICT;

CREATE UNIQUE INDEX commits_canvas_rev ON commits (canvas_id, rev);

-- Materialized state every N commits, written by reducer schema `schema`.
CREATE TABLE state_snapshots (
	canvas_id TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	rev       INTEGER NOT NULL CHECK (rev >= 0),
	schema    INTEGER NOT NULL,
	data      BLOB    NOT NULL,
	PRIMARY KEY (canvas_id, rev)
) STRICT;

-- Stored answers to commands sent with an idempotency key; written in the
-- same transaction as the commit they answer.
CREATE TABLE idempotency (
	canvas_id   TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	key         TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL,
	status      INTEGER NOT NULL,
	body        BLOB    NOT NULL,
	rev         INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (canvas_id, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX idempotency_created_idx ON idempotency (created_at);

-- User-visible snapshot markers (label → revision).
CREATE TABLE named_snapshots (
	canvas_id   TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	id          TEXT    NOT NULL,
	label       TEXT    NOT NULL DEFAULT '',
	description TEXT    NOT NULL DEFAULT '',
	rev         INTEGER NOT NULL CHECK (rev >= 0),
	created_by  TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (canvas_id, id)
) STRICT;

CREATE INDEX named_snapshots_list_idx ON named_snapshots (canvas_id, created_at, id);

-- API tokens, stored by the SHA-256 of the secret; one token per actor.
CREATE TABLE tokens (
	hash       BLOB    NOT NULL PRIMARY KEY,
	actor_id   TEXT    NOT NULL UNIQUE,
	actor_type TEXT    NOT NULL,
	role       TEXT    NOT NULL,
	canvases   TEXT    NOT NULL DEFAULT '[]', -- JSON array of canvas ids; [] = every canvas
	name       TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
) STRICT;

-- Agent runner sessions (used by the agent package).
CREATE TABLE canvas_agent_sessions (
	id         TEXT    NOT NULL PRIMARY KEY,
	canvas_id  TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	actor_id   TEXT    NOT NULL,
	state      TEXT    NOT NULL,
	model      TEXT    NOT NULL DEFAULT '',
	data       TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
	created_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
	updated_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER))
) STRICT;

CREATE INDEX canvas_agent_sessions_canvas_idx ON canvas_agent_sessions (canvas_id, created_at);

-- Agent todos, as in the PostgreSQL schema (uuid → TEXT with a random v4
-- default, timestamptz → INTEGER µs, now() → the current time). session_id
-- has no foreign key; the store deletes a canvas's sessions' todos when it
-- deletes the canvas.
CREATE TABLE canvas_agent_todos (
	id          TEXT    NOT NULL PRIMARY KEY DEFAULT (
		lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
		substr(lower(hex(randomblob(2))), 2) || '-' ||
		substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' ||
		lower(hex(randomblob(6)))),
	session_id  TEXT    NOT NULL,
	text        TEXT    NOT NULL,
	status      TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'skipped')),
	position    INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
	resolved_at INTEGER
) STRICT;

CREATE INDEX canvas_agent_todos_session_idx ON canvas_agent_todos (session_id, status, position);
