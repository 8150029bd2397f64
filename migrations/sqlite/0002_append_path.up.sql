-- canvasd schema, SQLite dialect, version 2: a cheaper append path.
--
-- Every Append inserts one commits row and (usually) one idempotency row per
-- command. Two changes make those inserts cheaper; the data is copied as is.
--
-- 1. commits and idempotency no longer carry a FOREIGN KEY to canvases. The
--    store writes their rows only for an Append whose head UPDATE of the
--    canvases row succeeded earlier in the same write transaction (so the
--    canvas exists), and DeleteCanvas deletes them explicitly instead of by
--    cascade. Without the foreign key (and with INSERT OR FAIL) SQLite no
--    longer keeps a statement journal for the multi-row INSERTs of a group
--    commit, nor looks the parent up for every row.
--
-- 2. idempotency becomes a rowid table (rows appended in insertion order,
--    packed densely) with a small UNIQUE index on (canvas_id, key) for the
--    lookups. The old WITHOUT ROWID table kept the ~200-byte rows in key
--    order, so every insert landed in a different, half-full leaf and split
--    it often: it was 3/4 of the pages each commit wrote to the log.
--
-- The other tables keep their foreign keys (their writes are rare).
-- Rebuilding copies every commit once; the migration runs in one transaction.

CREATE TABLE commits_v2 (
	seq        INTEGER PRIMARY KEY,
	canvas_id  TEXT    NOT NULL,              -- canvases.id; no FOREIGN KEY, see above
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

INSERT INTO commits_v2 (seq, canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	SELECT seq, canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes FROM commits ORDER BY seq;
DROP TABLE commits;
ALTER TABLE commits_v2 RENAME TO commits;
CREATE UNIQUE INDEX commits_canvas_rev ON commits (canvas_id, rev);

CREATE TABLE idempotency_v2 (
	canvas_id   TEXT    NOT NULL,             -- canvases.id; no FOREIGN KEY, see above
	key         TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL,
	status      INTEGER NOT NULL,
	body        BLOB    NOT NULL,
	rev         INTEGER NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;

INSERT INTO idempotency_v2 (canvas_id, key, fingerprint, status, body, rev, created_at)
	SELECT canvas_id, key, fingerprint, status, body, rev, created_at FROM idempotency ORDER BY created_at;
DROP TABLE idempotency;
ALTER TABLE idempotency_v2 RENAME TO idempotency;
CREATE UNIQUE INDEX idempotency_canvas_key ON idempotency (canvas_id, key);
CREATE INDEX idempotency_created_idx ON idempotency (created_at);
