package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/migrations"
)

// migrationLockKey is the first key of the advisory lock that serializes
// migration runs (the second is the hash of the schema's name), "cvds".
const migrationLockKey = 0x63766473

// Migrate opens the database at databaseURL, applies pending migrations and
// closes it again (`canvasd migrate`). Errors are Open's.
func Migrate(ctx context.Context, databaseURL string, opts ...Option) error {
	s, err := Open(ctx, databaseURL, opts...)
	if err != nil {
		return err
	}
	return s.Close()
}

// migrate applies the pending postgres migrations in one transaction that
// holds pg_advisory_xact_lock, so processes starting together neither race
// nor apply a version twice. A database newer than this binary is an error.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations.Load("postgres")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.lockSchema(ctx, tx); err != nil {
			return err
		}
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		if err := migrations.Check(ms, applied); err != nil {
			return err
		}
		for _, m := range migrations.Pending(ms, applied) {
			if _, err := tx.Exec(ctx, m.Up); err != nil {
				return fmt.Errorf("apply migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, s.now().UnixMicro()); err != nil {
				return fmt.Errorf("record migration %d: %w", m.Version, err)
			}
			s.log.Info("pgstore: applied migration", "version", m.Version, "name", m.Name)
		}
		return nil
	})
}

// migrateDown undoes applied migrations down to (not including) version
// target, newest first, in one locked transaction.
func (s *Store) migrateDown(ctx context.Context, target int64) error {
	ms, err := migrations.Load("postgres")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.lockSchema(ctx, tx); err != nil {
			return err
		}
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		if err := migrations.Check(ms, applied); err != nil {
			return err
		}
		done := map[int64]bool{}
		for _, v := range applied {
			done[v] = true
		}
		for i := len(ms) - 1; i >= 0 && ms[i].Version > target; i-- {
			m := ms[i]
			if !done[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.Down); err != nil {
				return fmt.Errorf("undo migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM schema_migrations WHERE version = $1`, m.Version); err != nil {
				return err
			}
		}
		return nil
	})
}

// lockSchema takes the migration advisory lock for this store's schema and
// makes sure the schema and the schema_migrations table exist.
func (s *Store) lockSchema(ctx context.Context, tx pgx.Tx) error {
	if s.cfg.schema != "" {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockKey, s.cfg.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.cfg.schema}.Sanitize()); err != nil {
			return err
		}
	} else {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		if schema == nil {
			return errors.New("no schema of search_path exists; create it or set search_path")
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockKey, *schema); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, migrations.SchemaMigrationsDDL)
	return err
}

func appliedVersions(ctx context.Context, tx pgx.Tx) ([]int64, error) {
	rows, _ := tx.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
