-- canvasd schema, SQLite dialect, version 7: a canvas's head is its log's.
--
-- The head of a canvas is the last revision in commits (0 when it has none),
-- read from the end of the unique (canvas_id, rev) index. An Append used to
-- move canvases.head_rev too, in the same transaction: one more statement
-- and one more page written to the log per group commit, for a value the
-- log already holds. The column goes.
ALTER TABLE canvases DROP COLUMN head_rev;
