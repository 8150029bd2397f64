-- Undoes 0002_typed_outcomes.up.sql: outcomes become HTTP statuses again.
ALTER TABLE idempotency RENAME COLUMN result TO body;
ALTER TABLE idempotency ADD COLUMN status integer NOT NULL DEFAULT 200;
UPDATE idempotency SET status = 409 WHERE outcome = 'conflict';
ALTER TABLE idempotency DROP COLUMN outcome;
