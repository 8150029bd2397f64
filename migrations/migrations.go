// Package migrations holds the numbered, embedded SQL schema of every store
// backend and a small dialect-neutral loader for it.
//
// # Layout
//
// Each dialect has its own directory (sqlite/, postgres/) holding pairs of
// files named
//
//	NNNN_name.up.sql    applied to move the schema from version NNNN-1 to NNNN
//	NNNN_name.down.sql  undoes exactly what the up file did
//
// NNNN is a decimal version (any number of digits, leading zeros allowed);
// versions start at 1 and are gap-free within a dialect. name is
// [a-z0-9_]+ and is informational. A migration file may contain several
// statements; the store executes it as one script.
//
// # The schema_migrations convention (both stores follow it)
//
// A store keeps the applied versions in a table created with
// SchemaMigrationsDDL (identical SQL on SQLite and PostgreSQL):
//
//	schema_migrations(version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)
//
// applied_at is Unix microseconds (UTC). To migrate, a store reads the
// applied versions, and for each migration returned by Pending, in order, runs
// its Up script and inserts its (version, name, applied_at) row in ONE
// transaction, so a crash never leaves a half-applied version recorded.
// A store that finds an applied version greater than the last embedded one
// refuses to start (the database is newer than the binary); see Check.
// Stores shared between processes serialize migration runs themselves
// (PostgreSQL: an advisory lock around the whole run).
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
)

// files holds every dialect directory. The pattern matches one directory
// level, so adding migrations/<dialect>/ needs no change here.
//
//go:embed */*.sql
var files embed.FS

// SchemaMigrationsDDL creates the bookkeeping table on every dialect.
const SchemaMigrationsDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT   NOT NULL,
	applied_at BIGINT NOT NULL
)`

// Migration is one numbered schema step of one dialect.
type Migration struct {
	Version int64  // 1, 2, 3, ... gap-free
	Name    string // from the file name, e.g. "init"
	Up      string // SQL script moving the schema to Version
	Down    string // SQL script moving it back to Version-1
}

var fileRE = regexp.MustCompile(`^([0-9]+)_([a-z0-9_]+)\.(up|down)\.sql$`)

// Load returns the migrations of dialect ("sqlite", "postgres", ...) in
// ascending version order. It fails when the dialect has no migrations, a
// file name does not follow NNNN_name.up|down.sql, a version lacks its up or
// down file, two files share a version, or versions are not 1..n gap-free.
func Load(dialect string) ([]Migration, error) {
	return load(files, dialect)
}

func load(fsys fs.FS, dialect string) ([]Migration, error) {
	if dialect == "" || dialect == "." || path.Base(dialect) != dialect {
		return nil, fmt.Errorf("migrations: invalid dialect %q", dialect)
	}
	entries, err := fs.ReadDir(fsys, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: no migrations for dialect %q: %w", dialect, err)
	}
	byVersion := map[int64]*Migration{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: %s/%s: name must be NNNN_name.up.sql or NNNN_name.down.sql", dialect, e.Name())
		}
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("migrations: %s/%s: bad version %q", dialect, e.Name(), m[1])
		}
		body, err := fs.ReadFile(fsys, path.Join(dialect, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %s/%s: %w", dialect, e.Name(), err)
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		} else if mig.Name != m[2] {
			return nil, fmt.Errorf("migrations: %s: version %d has two names, %q and %q", dialect, v, mig.Name, m[2])
		}
		dst := &mig.Up
		if m[3] == "down" {
			dst = &mig.Down
		}
		if *dst != "" {
			return nil, fmt.Errorf("migrations: %s: version %d has two %s files", dialect, v, m[3])
		}
		if len(body) == 0 {
			return nil, fmt.Errorf("migrations: %s/%s is empty", dialect, e.Name())
		}
		*dst = string(body)
	}
	if len(byVersion) == 0 {
		return nil, fmt.Errorf("migrations: no migrations for dialect %q", dialect)
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != int64(i+1) {
			return nil, fmt.Errorf("migrations: %s: versions must be 1..n without gaps; expected %d, found %d", dialect, i+1, m.Version)
		}
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migrations: %s: version %d (%s) needs both an up and a down file", dialect, m.Version, m.Name)
		}
	}
	return out, nil
}

// Check verifies that every applied version is one of ms (the database is
// not newer than the binary). applied is the set of versions read from
// schema_migrations.
func Check(ms []Migration, applied []int64) error {
	var last int64
	if len(ms) > 0 {
		last = ms[len(ms)-1].Version
	}
	for _, v := range applied {
		if v < 1 || v > last {
			return fmt.Errorf("migrations: database has schema version %d, this binary knows versions 1..%d; upgrade canvasd", v, last)
		}
	}
	return nil
}

// Pending returns the migrations of ms (as returned by Load) whose versions
// are not in applied, in ascending order.
func Pending(ms []Migration, applied []int64) []Migration {
	done := make(map[int64]bool, len(applied))
	for _, v := range applied {
		done[v] = true
	}
	var out []Migration
	for _, m := range ms {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out
}
