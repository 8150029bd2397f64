-- canvasd schema, PostgreSQL dialect, version 3: agent session turns, and
-- todos that are unique by their text within a session.
--
-- 1. A todo is one item of its session's list: the same text again updates
--    that item (its status) instead of adding a row. Earlier versions added
--    a row per mention; of each text only the first row is kept.
-- 2. canvas_agent_turns lists each session's turns with the revisions of
--    the commits each made (a JSON array of integers), which a revert undoes.

DELETE FROM canvas_agent_todos a USING canvas_agent_todos b
    WHERE a.session_id = b.session_id AND a.text = b.text
      AND (a.position, a.created_at, a.id::text) > (b.position, b.created_at, b.id::text);

CREATE UNIQUE INDEX canvas_agent_todos_text_idx ON canvas_agent_todos (session_id, text);

CREATE TABLE canvas_agent_turns (
    session_id text        NOT NULL REFERENCES canvas_agent_sessions (id) ON DELETE CASCADE,
    turn       int         NOT NULL CHECK (turn > 0),
    kind       text        NOT NULL,
    revs       jsonb       NOT NULL DEFAULT '[]',
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    PRIMARY KEY (session_id, turn)
);
