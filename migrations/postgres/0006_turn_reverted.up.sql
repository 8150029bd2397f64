-- canvasd schema, PostgreSQL dialect, version 6: an agent turn remembers its
-- revert. reverted_rev is the revision of the revert_commits commit that
-- reverted the turn (POST /api/canvas-agent/sessions/{id}/revert), NULL
-- while it has not been reverted. A turn is reverted at most once: a revert
-- without a body takes only the turns whose reverted_rev is NULL.
ALTER TABLE canvas_agent_turns ADD COLUMN reverted_rev bigint CHECK (reverted_rev > 0);
