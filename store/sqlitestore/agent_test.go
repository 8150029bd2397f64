package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/canvasd/canvasd/migrations"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// TestMigrationMergesDuplicateTodos: migration 4 keeps the first row of each
// (session, text), so the unique index can be built over a database written
// by a version that added a row per mention.
func TestMigrationMergesDuplicateTodos(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := migrations.Load(sqlitestore.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	for _, m := range ms[:3] {
		exec(m.Up)
	}
	exec(`INSERT INTO canvases (id, title, created_at, created_by) VALUES ('c', '', 0, '')`)
	exec(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state) VALUES ('s', 'c', 'agent-1', 'done')`)
	for i, text := range []string{"footer", "header", "footer", "footer"} {
		exec(`INSERT INTO canvas_agent_todos (session_id, text, position) VALUES ('s', ?, ?)`, text, i)
	}
	if ms[3].Name != "agent_turns_todos" {
		t.Fatalf("migration 4 is %q", ms[3].Name)
	}
	exec(ms[3].Up)
	rows, err := db.Query(`SELECT text, position FROM canvas_agent_todos ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var text string
		var pos int
		if err := rows.Scan(&text, &pos); err != nil {
			t.Fatal(err)
		}
		got = append(got, text+"@"+string(rune('0'+pos)))
	}
	if len(got) != 2 || got[0] != "footer@0" || got[1] != "header@1" {
		t.Fatalf("todos after migration 4: %v", got)
	}
	if _, err := db.Exec(`INSERT INTO canvas_agent_todos (session_id, text) VALUES ('s', 'header')`); err == nil {
		t.Fatal("a second row with the same text was accepted")
	}
}
