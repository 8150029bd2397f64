package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadSQLite(t *testing.T) {
	ms, err := Load("sqlite")
	if err != nil {
		t.Fatalf("Load(sqlite): %v", err)
	}
	if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "init" {
		t.Fatalf("Load(sqlite) = %+v, want version 1 named init first", ms)
	}
	for i, m := range ms {
		if m.Version != int64(i+1) || m.Up == "" || m.Down == "" {
			t.Fatalf("migration %d = version %d, up %d bytes, down %d bytes", i, m.Version, len(m.Up), len(m.Down))
		}
	}
	for _, table := range []string{"canvases", "commits", "state_snapshots", "idempotency", "named_snapshots", "tokens",
		"canvas_agent_todos", "canvas_agent_sessions"} {
		if !strings.Contains(ms[0].Up, "CREATE TABLE "+table+" (") {
			t.Errorf("0001 up does not create %s", table)
		}
		if !strings.Contains(ms[0].Down, "DROP TABLE IF EXISTS "+table+";") {
			t.Errorf("0001 down does not drop %s", table)
		}
	}
}

func TestLoadRejectsBadSets(t *testing.T) {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"ok", fstest.MapFS{"d/0001_a.up.sql": f("x"), "d/0001_a.down.sql": f("y"), "d/0002_b.up.sql": f("x"), "d/0002_b.down.sql": f("y")}, ""},
		{"leading zeros optional", fstest.MapFS{"d/1_a.up.sql": f("x"), "d/1_a.down.sql": f("y")}, ""},
		{"empty dialect", fstest.MapFS{"e/0001_a.up.sql": f("x")}, "no migrations"},
		{"gap", fstest.MapFS{"d/0001_a.up.sql": f("x"), "d/0001_a.down.sql": f("y"), "d/0003_c.up.sql": f("x"), "d/0003_c.down.sql": f("y")}, "without gaps"},
		{"starts at 2", fstest.MapFS{"d/0002_a.up.sql": f("x"), "d/0002_a.down.sql": f("y")}, "without gaps"},
		{"missing down", fstest.MapFS{"d/0001_a.up.sql": f("x")}, "both an up and a down"},
		{"missing up", fstest.MapFS{"d/0001_a.down.sql": f("x")}, "both an up and a down"},
		{"two names", fstest.MapFS{"d/0001_a.up.sql": f("x"), "d/0001_b.down.sql": f("y")}, "two names"},
		{"same version twice", fstest.MapFS{"d/0001_a.up.sql": f("x"), "d/001_a.up.sql": f("x"), "d/0001_a.down.sql": f("y")}, "two up files"},
		{"bad name", fstest.MapFS{"d/init.sql": f("x")}, "name must be"},
		{"empty file", fstest.MapFS{"d/0001_a.up.sql": f(""), "d/0001_a.down.sql": f("y")}, "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dialect := "d"
			_, err := load(tc.fs, dialect)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, d := range []string{"", ".", "../sqlite", "a/b"} {
		if _, err := Load(d); err == nil {
			t.Errorf("Load(%q) succeeded", d)
		}
	}
}

func TestPendingAndCheck(t *testing.T) {
	ms := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	if got := Pending(ms, nil); len(got) != 3 {
		t.Fatalf("Pending(none applied) = %d, want 3", len(got))
	}
	got := Pending(ms, []int64{1, 2})
	if len(got) != 1 || got[0].Version != 3 {
		t.Fatalf("Pending(1,2 applied) = %+v, want [3]", got)
	}
	if got := Pending(ms, []int64{1, 2, 3}); len(got) != 0 {
		t.Fatalf("Pending(all applied) = %+v", got)
	}
	if err := Check(ms, []int64{1, 2, 3}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := Check(ms, []int64{1, 4}); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Fatalf("Check with a newer database = %v, want an error naming version 4", err)
	}
}
