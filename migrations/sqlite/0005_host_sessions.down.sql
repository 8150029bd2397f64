-- Undoes 0005_host_sessions.up.sql.
DROP TABLE IF EXISTS shared_secrets;
DROP TABLE IF EXISTS host_files;
DROP TABLE IF EXISTS host_sessions;
