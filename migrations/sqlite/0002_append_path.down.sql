-- Undoes 0002_append_path.up.sql: commits and idempotency get back their
-- foreign keys (ON DELETE CASCADE) and idempotency its WITHOUT ROWID form.
-- Rows of a canvas that no longer exists (there should be none) are dropped.

CREATE TABLE commits_v1 (
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

INSERT INTO commits_v1 (seq, canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	SELECT seq, canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes FROM commits
	WHERE canvas_id IN (SELECT id FROM canvases) ORDER BY seq;
DROP TABLE commits;
ALTER TABLE commits_v1 RENAME TO commits;
CREATE UNIQUE INDEX commits_canvas_rev ON commits (canvas_id, rev);

CREATE TABLE idempotency_v1 (
	canvas_id   TEXT    NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
	key         TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL,
	status      INTEGER NOT NULL,
	body        BLOB    NOT NULL,
	rev         INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (canvas_id, key)
) STRICT, WITHOUT ROWID;

INSERT INTO idempotency_v1 (canvas_id, key, fingerprint, status, body, rev, created_at)
	SELECT canvas_id, key, fingerprint, status, body, rev, created_at FROM idempotency
	WHERE canvas_id IN (SELECT id FROM canvases);
DROP TABLE idempotency;
ALTER TABLE idempotency_v1 RENAME TO idempotency;
CREATE INDEX idempotency_created_idx ON idempotency (created_at);
