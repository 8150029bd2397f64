package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// migrateAttempts bounds the appends of one migration that lose to another
// writer (each loss means another process appended first: the engine
// catches up and looks again).
const migrateAttempts = 5

// migrate brings a canvas stored under model 1 to model 2 (docs/model.md)
// the first time it is loaded: it appends one migrate_model commit (actor
// canvasd, a service) with reducer.MigrateModel's changes, when there are
// any. The caller owns l (loading) and has caught it up with the log.
//
// Only a state rebuilt from the log needs the look: the engine stores
// snapshots (of reducer.Schema) only of canvases at model 2. Of several
// processes loading the same canvas at once, one appends; the others' head
// checks fail, they read its commit, and then find nothing to migrate.
func (e *Engine) migrate(ctx context.Context, l *live) error {
	for attempt := 0; ; attempt++ {
		var seed [10]byte
		_, _ = rand.Read(seed[:])
		rev := l.state.Rev + 1
		cmd := canvas.Command{CanvasID: l.id, ID: "migrate_model_" + hex.EncodeToString(seed[:4]), Type: reducer.CmdMigrateModel,
			Args: []byte(`{"from":1,"to":` + strconv.Itoa(canvas.Model) + `}`), Actor: reducer.MigrationActor, Rev: rev,
			TS: e.cfg.Now().UTC(), Seed: hex.EncodeToString(seed[:4])}
		dec, err := reducer.MigrateModel(l.state, cmd)
		if err != nil {
			// The canvas stays as it is, readable; writes are checked as always.
			e.log.Error("migrating a canvas to model 2 failed; it is served as stored", "canvas", l.id, "err", err)
			return nil
		}
		if len(dec.Changes) == 0 {
			return nil
		}
		if attempt == migrateAttempts {
			return fmt.Errorf("migrating canvas %s to model %d: other writers appended first %d times: %w", l.id, canvas.Model, attempt, canvas.ErrUnavailable)
		}
		c := canvas.Commit{CanvasID: l.id, EventID: strconv.FormatInt(rev, 10) + "-" + hex.EncodeToString(seed[4:]), Rev: rev,
			CmdID: cmd.ID, Type: cmd.Type, Args: cmd.Args, ActorID: cmd.Actor.ID, ActorType: cmd.Actor.Type, TS: cmd.TS, Changes: dec.Changes}
		if err := c.Encode(); err != nil {
			e.log.Error("encoding the migration of a canvas to model 2 failed; it is served as stored", "canvas", l.id, "err", err)
			return nil
		}
		if err := e.st.Append(ctx, l.id, l.state.Rev, []canvas.Commit{c}, nil); err != nil {
			// Another process appended first (its migration, most likely),
			// or the outcome is unknown: read the log and look again.
			if cerr := e.catchUp(ctx, l); cerr != nil {
				return fmt.Errorf("migrating canvas %s to model %d: %w (then reading its log: %w)", l.id, canvas.Model, err, cerr)
			}
			continue
		}
		if err := reducer.ApplyDecision(l.state, &c, &dec); err != nil {
			return fmt.Errorf("applying the migration of canvas %s: %w", l.id, err)
		}
		e.committed(l, &c)
		e.log.Info("canvas migrated to model 2", "canvas", l.id, "rev", rev, "changes", len(c.Changes))
		return nil
	}
}
