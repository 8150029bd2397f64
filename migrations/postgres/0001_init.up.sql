-- canvasd schema, PostgreSQL dialect. Applied by store/pgstore at start (and by
-- `canvasd migrate`) inside one transaction guarded by pg_advisory_xact_lock.
-- Tables are created in the first schema of search_path.

-- One row per canvas. head_rev is the per-canvas row lock of every append:
--   UPDATE canvases SET head_rev = head_rev + n WHERE id = $1 AND head_rev = $2
CREATE TABLE canvases (
    id         text        PRIMARY KEY,
    title      text        NOT NULL DEFAULT '',
    head_rev   bigint      NOT NULL DEFAULT 0 CHECK (head_rev >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text        NOT NULL DEFAULT ''
);
CREATE INDEX canvases_created_idx ON canvases (created_at, id);

-- The event log: one row per revision, gap-free per canvas.
CREATE TABLE commits (
    canvas_id  text        NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
    rev        bigint      NOT NULL CHECK (rev > 0),
    event_id   text        NOT NULL,
    cmd_id     text        NOT NULL DEFAULT '',
    type       text        NOT NULL,
    args       json,                          -- JSON object (NULL: none)
    actor_id   text        NOT NULL,
    actor_type text        NOT NULL,
    ts         timestamptz NOT NULL,
    changes    json        NOT NULL DEFAULT '[]', -- JSON array of canvas.Change
    PRIMARY KEY (canvas_id, rev)
);

-- Materialized states every N commits, with the reducer schema that wrote them.
CREATE TABLE state_snapshots (
    canvas_id  text        NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
    rev        bigint      NOT NULL CHECK (rev >= 0),
    schema     integer     NOT NULL,
    data       bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (canvas_id, rev)
);

-- Stored answers to commands sent with an idempotency key, written in the
-- same transaction as the commit they answer.
CREATE TABLE idempotency (
    canvas_id   text        NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
    key         text        NOT NULL,
    fingerprint bytea       NOT NULL, -- canvas.Envelope.Fingerprint (contains NUL separators)
    status      integer     NOT NULL,
    body        bytea       NOT NULL,
    rev         bigint      NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (canvas_id, key)
);
CREATE INDEX idempotency_created_idx ON idempotency (created_at);

-- User-visible snapshot markers (label → revision).
CREATE TABLE named_snapshots (
    canvas_id   text        NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
    id          text        NOT NULL,
    label       text        NOT NULL DEFAULT '',
    description text        NOT NULL DEFAULT '',
    rev         bigint      NOT NULL CHECK (rev >= 0),
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (canvas_id, id)
);
CREATE INDEX named_snapshots_list_idx ON named_snapshots (canvas_id, created_at, id);

-- API tokens, stored by the SHA-256 of the secret; one token per actor.
CREATE TABLE tokens (
    hash       bytea       PRIMARY KEY,
    actor_id   text        NOT NULL UNIQUE,
    actor_type text        NOT NULL,
    role       text        NOT NULL,
    canvases   text[]      NOT NULL DEFAULT '{}', -- canvas ids; {} = every canvas
    name       text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

-- Agent runner sessions (used by the agent package).
CREATE TABLE canvas_agent_sessions (
    id         text        PRIMARY KEY,
    canvas_id  text        NOT NULL REFERENCES canvases (id) ON DELETE CASCADE,
    actor_id   text        NOT NULL,
    state      text        NOT NULL,
    model      text        NOT NULL DEFAULT '',
    data       json        NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX canvas_agent_sessions_canvas_idx ON canvas_agent_sessions (canvas_id, created_at);

-- Agent todos (canvas_agent_todos, a table other tools of the agent protocol
-- read by this name), in the schema of search_path rather than public.
-- session_id has no foreign key; the store deletes a canvas's sessions'
-- todos when it deletes the canvas.
CREATE TABLE canvas_agent_todos (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id  text        NOT NULL,
    text        text        NOT NULL,
    status      text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'skipped')),
    position    int         NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX canvas_agent_todos_session_idx
    ON canvas_agent_todos (session_id, status, position);
