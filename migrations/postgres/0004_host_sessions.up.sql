-- canvasd schema, PostgreSQL dialect, version 4: the canvas host's sessions
-- live in the store (they lived in <data-dir>/host/<session>/ of each
-- process before), so every process serves the same pages and A2UI surfaces.

-- One row per host session that has files or A2UI state; writers of a
-- session lock it (SELECT ... FOR UPDATE), which serializes them across
-- processes. state is the session's A2UI surfaces as one JSON document,
-- replaced as a whole; state_version counts the saves (compare-and-set).
CREATE TABLE host_sessions (
    session       text   PRIMARY KEY,
    state_version bigint NOT NULL DEFAULT 0 CHECK (state_version >= 0),
    state         bytea
);

-- The files of a session. path is relative and "/"-separated; directories
-- are implicit (a directory exists while a file lies under it). path uses
-- the "C" collation, so it compares byte for byte and the files under "a/"
-- are the index range ["a/", "a0").
CREATE TABLE host_files (
    session  text        NOT NULL REFERENCES host_sessions (session) ON DELETE CASCADE,
    path     text        COLLATE "C" NOT NULL,
    data     bytea       NOT NULL,
    size     bigint      NOT NULL,
    modified timestamptz NOT NULL,
    PRIMARY KEY (session, path)
);

-- Secrets every process sharing the store must agree on (the host's
-- page-ticket key), created once by whichever process needs one first.
CREATE TABLE shared_secrets (
    name       text        PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
