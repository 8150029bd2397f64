-- canvasd schema, PostgreSQL dialect, version 2: idempotency records keep
-- what became of the command ('applied' or 'conflict') and its result
-- document, not an HTTP status and body (the API maps outcomes to statuses).
ALTER TABLE idempotency ADD COLUMN outcome text NOT NULL DEFAULT 'applied' CHECK (outcome IN ('applied', 'conflict'));
UPDATE idempotency SET outcome = 'conflict' WHERE status = 409;
ALTER TABLE idempotency DROP COLUMN status;
ALTER TABLE idempotency RENAME COLUMN body TO result;
