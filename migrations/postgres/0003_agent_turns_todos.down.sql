-- Undoes 0003_agent_turns_todos.up.sql (merged duplicate todos stay merged).
DROP TABLE IF EXISTS canvas_agent_turns;
DROP INDEX IF EXISTS canvas_agent_todos_text_idx;
