-- Undoes 0006_turn_reverted.up.sql (which turns were reverted is forgotten).
ALTER TABLE canvas_agent_turns DROP COLUMN IF EXISTS reverted_rev;
