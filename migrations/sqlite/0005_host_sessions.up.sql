-- canvasd schema, SQLite dialect, version 5: the canvas host's sessions live
-- in the store (they lived in <data-dir>/host/<session>/ before), so every
-- process sharing the store serves the same pages and A2UI surfaces.

-- One row per host session that has files or A2UI state. state is the
-- session's A2UI surfaces as one JSON document, replaced as a whole;
-- state_version counts the saves (compare-and-set on it).
CREATE TABLE host_sessions (
	session       TEXT    NOT NULL PRIMARY KEY,
	state_version INTEGER NOT NULL DEFAULT 0 CHECK (state_version >= 0),
	state         BLOB
) STRICT;

-- The files of a session. path is relative and "/"-separated; directories
-- are implicit (a directory exists while a file lies under it). Paths
-- compare byte for byte (BINARY), so the files under "a/" are the range
-- ["a/", "a0").
CREATE TABLE host_files (
	session  TEXT    NOT NULL REFERENCES host_sessions (session) ON DELETE CASCADE,
	path     TEXT    NOT NULL,
	data     BLOB    NOT NULL,
	size     INTEGER NOT NULL,
	modified INTEGER NOT NULL,
	PRIMARY KEY (session, path)
) STRICT; -- a rowid table: rows carry up to megabytes of data

-- Secrets every process sharing the store must agree on (the host's
-- page-ticket key), created once by whichever process needs one first.
CREATE TABLE shared_secrets (
	name       TEXT    NOT NULL PRIMARY KEY,
	value      BLOB    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
