-- Undoes 0007_head_from_log.up.sql: canvases.head_rev comes back, set from the log.
ALTER TABLE canvases ADD COLUMN head_rev INTEGER NOT NULL DEFAULT 0 CHECK (head_rev >= 0);
UPDATE canvases SET head_rev = coalesce((SELECT max(rev) FROM commits WHERE commits.canvas_id = canvases.id), 0);
