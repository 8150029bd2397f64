-- canvasd schema, SQLite dialect, version 4: agent session turns, and todos
-- that are unique by their text within a session.
--
-- 1. A todo is one item of its session's list: the same text again updates
--    that item (its status) instead of adding a row. Earlier versions added
--    a row per mention; of each text only the first row is kept.
-- 2. canvas_agent_turns lists each session's turns with the revisions of
--    the commits each made (a JSON array of integers), which a revert undoes.

DELETE FROM canvas_agent_todos
	WHERE rowid NOT IN (SELECT MIN(rowid) FROM canvas_agent_todos GROUP BY session_id, text);

CREATE UNIQUE INDEX canvas_agent_todos_text_idx ON canvas_agent_todos (session_id, text);

CREATE TABLE canvas_agent_turns (
	session_id TEXT    NOT NULL REFERENCES canvas_agent_sessions (id) ON DELETE CASCADE,
	turn       INTEGER NOT NULL CHECK (turn > 0),
	kind       TEXT    NOT NULL,
	revs       TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(revs)),
	started_at INTEGER NOT NULL,
	ended_at   INTEGER,
	PRIMARY KEY (session_id, turn)
) STRICT, WITHOUT ROWID;
