package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// TestWriterSynchronousMode checks the writer connection's durability
// setting: NORMAL by default (survives a process crash), FULL with
// WithFullSync (fsync per commit).
func TestWriterSynchronousMode(t *testing.T) {
	for fullSync, want := range map[bool]int{false: 1, true: 2} { // PRAGMA synchronous: 1 NORMAL, 2 FULL
		db, err := sql.Open("sqlite", writerDSN(filepath.Join(t.TempDir(), "s.db"), "_pragma=busy_timeout(100)", fullSync))
		if err != nil {
			t.Fatal(err)
		}
		var got int
		err = db.QueryRow("PRAGMA synchronous").Scan(&got)
		db.Close()
		if err != nil || got != want {
			t.Fatalf("fullSync %v: synchronous = %d (%v), want %d", fullSync, got, err, want)
		}
	}
}
