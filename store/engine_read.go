package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// Reads. The engine's reads (View, Head, CommitsAfter, ResolveEventID) are
// linearizable: on a store other processes write too (a Notifier), a read
// first confirms the canvas's head in the store, as etcd's ReadIndex does,
// and catches this process's copy up to it, so it reflects every commit
// acknowledged by any process before the read began. An unreachable store
// fails the read with canvas.ErrUnavailable rather than answering from a
// copy nobody can vouch for. A context made with LocalReads skips the
// confirmation: cheaper, but the read may trail commits made through other
// processes. On a store only this process writes, every read is both.

type localReadsKey struct{}

// LocalReads returns a context whose engine reads answer from this process's
// copy of the canvas without confirming its head in the store: no round
// trip to the database, but they may miss commits other processes made (by
// the time the notice of them arrives, typically milliseconds; for as long
// as the database is unreachable).
func LocalReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, localReadsKey{}, true)
}

func localReads(ctx context.Context) bool {
	v, _ := ctx.Value(localReadsKey{}).(bool)
	return v
}

// Linearize makes this process's copy of the canvas reflect every commit
// acknowledged, through any process, before the call: on a shared store it
// reads the canvas's head from the store (one round trip) and catches the
// copy up to it. It does nothing on a store only this process writes, or
// with a LocalReads context. Errors: canvas.ErrNotFound (the canvas was
// deleted, by whichever process), canvas.ErrUnavailable (the store cannot
// be reached: the copy may be stale). The store is read without holding the
// canvas's lock, so a confirmation never holds up its writer.
func (e *Engine) Linearize(ctx context.Context, canvasID string) error {
	if !e.shared || localReads(ctx) {
		return nil
	}
	for {
		l, err := e.get(ctx, canvasID)
		if err != nil {
			return err
		}
		// The copy's head before the store's (see stillThere).
		l.mu.RLock()
		retired, createdAt, head := l.retired, l.createdAt, l.state.Rev
		l.mu.RUnlock()
		if retired {
			continue
		}
		c, err := e.st.GetCanvas(ctx, canvasID)
		switch {
		case errors.Is(err, canvas.ErrNotFound): // deleted through another process whose notice this one missed
			e.drop(l)
			return err
		case err != nil:
			return err
		case !c.CreatedAt.Equal(createdAt) || c.HeadRev < head:
			e.drop(l) // deleted and created again: load the new one
			continue
		}
		return e.catchUpTo(ctx, l, c.HeadRev)
	}
}

// drop retires l, found deleted or replaced in the store, unless that was
// done already, and tells OnGone (gone).
func (e *Engine) drop(l *live) {
	l.mu.Lock()
	done := l.retired
	l.retired = true
	l.mu.Unlock()
	if !done {
		e.gone(l)
	}
}

// catchUpTo brings l up to revision target (-1: the end of the log) from
// the store. The store is read without holding l.mu; the commits are then
// applied under it, those the copy already holds skipped (the writer or
// another catch-up may have applied them meanwhile).
func (e *Engine) catchUpTo(ctx context.Context, l *live, target int64) error {
	for {
		l.mu.RLock()
		from, retired := l.state.Rev, l.retired
		l.mu.RUnlock()
		if retired || target >= 0 && from >= target {
			return nil
		}
		limit := 1000
		if target >= 0 {
			limit = int(min(target-from, 1000))
		}
		commits, err := e.st.ReadCommits(ctx, l.id, from, limit)
		if err != nil {
			return err
		}
		if len(commits) == 0 {
			if target < 0 {
				return nil
			}
			return fmt.Errorf("log of canvas %s ends at rev %d, before its head %d", l.id, from, target)
		}
		l.mu.Lock()
		err = e.applyCommits(l, commits)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		if target < 0 && len(commits) < limit {
			return nil
		}
	}
}

// View calls fn with the canvas state at atRev (-1: the head) and the event
// id of that revision, a linearizable read (see Linearize). At the head fn
// runs under the canvas's read lock: it must not keep or modify s. Time
// travel (atRev < head) rebuilds the state from the nearest stored snapshot
// and the log.
func (e *Engine) View(ctx context.Context, canvasID string, atRev int64, fn func(s *canvas.State, eventID string) error) error {
	if err := e.Linearize(ctx, canvasID); err != nil {
		return err
	}
	l, err := e.readLocked(ctx, canvasID)
	if err != nil {
		return err
	}
	head, headEvent := l.state.Rev, l.headEventID
	if atRev < 0 || atRev == head {
		defer l.mu.RUnlock()
		return fn(l.state, headEvent)
	}
	l.mu.RUnlock()
	if atRev > head {
		return canvas.Unprocessable("at_rev", "revision %d is after the head (%d)", atRev, head)
	}
	s, evt, err := e.stateAt(ctx, canvasID, atRev)
	if err != nil {
		return err
	}
	return fn(s, evt)
}

// stateAt rebuilds the state at rev from the nearest snapshot and the log.
func (e *Engine) stateAt(ctx context.Context, canvasID string, rev int64) (*canvas.State, string, error) {
	s, _, err := e.loadState(ctx, canvasID, rev)
	if err != nil {
		return nil, "", err
	}
	evt := strconv.FormatInt(s.Rev, 10)
	for s.Rev < rev {
		commits, err := e.st.ReadCommits(ctx, canvasID, s.Rev, int(min(rev-s.Rev, 1000)))
		if err != nil {
			return nil, "", err
		}
		if len(commits) == 0 {
			return nil, "", fmt.Errorf("log of canvas %s ends before rev %d", canvasID, rev)
		}
		for i := range commits {
			if err := reducer.Apply(s, &commits[i]); err != nil {
				return nil, "", err
			}
			evt = commits[i].EventID
		}
	}
	return s, evt, nil
}

// Head returns the canvas's head revision and its event id, a linearizable
// read (see Linearize).
func (e *Engine) Head(ctx context.Context, canvasID string) (int64, string, error) {
	if err := e.Linearize(ctx, canvasID); err != nil {
		return 0, "", err
	}
	l, err := e.readLocked(ctx, canvasID)
	if err != nil {
		return 0, "", err
	}
	defer l.mu.RUnlock()
	return l.state.Rev, l.headEventID, nil
}

// CommitsAfter returns up to limit commits with rev > afterRev in order, from
// memory when they are recent and from the store otherwise, with the head at
// the time of the call, a linearizable read (see Linearize). The returned
// commits must not be modified.
func (e *Engine) CommitsAfter(ctx context.Context, canvasID string, afterRev int64, limit int) ([]*canvas.Commit, int64, error) {
	if err := e.Linearize(ctx, canvasID); err != nil {
		return nil, 0, err
	}
	l, err := e.readLocked(ctx, canvasID)
	if err != nil {
		return nil, 0, err
	}
	head := l.state.Rev
	if out, ok := l.recentAfter(afterRev, limit); ok {
		l.mu.RUnlock()
		return out, head, nil
	}
	l.mu.RUnlock()
	commits, err := e.st.ReadCommits(ctx, canvasID, afterRev, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*canvas.Commit, len(commits))
	for i := range commits {
		out[i] = &commits[i]
	}
	return out, head, nil
}

// sync catches a live canvas up with the end of its log now (reading the
// store without holding its lock) and returns its head.
func (e *Engine) sync(ctx context.Context, canvasID string) (int64, error) {
	for {
		l, err := e.get(ctx, canvasID)
		if err != nil {
			return 0, err
		}
		if err := e.catchUpTo(ctx, l, -1); err != nil {
			return 0, err
		}
		l.mu.RLock()
		head, retired := l.state.Rev, l.retired
		l.mu.RUnlock()
		if !retired {
			return head, nil
		}
	}
}

// recentAfter serves commits after afterRev from memory when it holds them
// all; false: they must be read from the store (also when the commits in
// memory end before the state's revision, as they may while a group is
// being applied).
func (l *live) recentAfter(afterRev int64, limit int) ([]*canvas.Commit, bool) {
	if afterRev >= l.state.Rev {
		return nil, true
	}
	if len(l.recent) == 0 || l.recent[0].Rev > afterRev+1 {
		return nil, false
	}
	i := int(afterRev + 1 - l.recent[0].Rev)
	if i >= len(l.recent) {
		return nil, false
	}
	end := min(len(l.recent), i+limit)
	return append([]*canvas.Commit(nil), l.recent[i:end]...), true
}

// ResolveEventID turns a Last-Event-ID into the revision it names: a commit's
// event id ("<rev>-<hex>"), a snapshot's head_event_id, or a bare revision.
// ok is false when the id cannot be resumed on this canvas (malformed,
// ahead of the head, or naming a commit this log does not hold). It reads
// the head as Head does: an unreachable store is an error, never a "cannot
// be resumed" answered from a copy that may be behind the client.
func (e *Engine) ResolveEventID(ctx context.Context, canvasID, id string) (rev int64, ok bool, err error) {
	revPart, suffix, hasSuffix := strings.Cut(id, "-")
	rev, perr := strconv.ParseInt(revPart, 10, 64)
	if perr != nil || rev < 0 {
		return 0, false, nil
	}
	head, _, err := e.Head(ctx, canvasID) // linearizable: every acknowledged commit is here now
	if err != nil {
		return 0, false, err
	}
	if rev > head {
		// Another process may have committed it: read the log, then decide.
		if head, err = e.sync(ctx, canvasID); err != nil {
			return 0, false, err
		}
		if rev > head {
			return rev, false, nil
		}
	}
	if !hasSuffix || rev == 0 {
		return rev, !hasSuffix, nil
	}
	_ = suffix
	commits, _, err := e.CommitsAfter(ctx, canvasID, rev-1, 1)
	if err != nil {
		return 0, false, err
	}
	return rev, len(commits) == 1 && commits[0].EventID == id, nil
}

// journal records the prior values of entities a group changes, so a failed
// Append can restore the in-memory state exactly.
type journal struct{ entries []journalEntry }

type journalEntry struct {
	rev     int64          // state.Rev before the commit (only on the first entry of a commit)
	hist    canvas.History // state.History before the commit; Apply replaces the map, never mutates it
	isRev   bool
	ref     canvas.Ref
	node    *canvas.Node
	edge    *canvas.Edge
	tomb    int64
	hasTomb bool
}

func (j *journal) mark() int { return len(j.entries) }

// reset empties the journal for the next group, keeping its room.
func (j *journal) reset() {
	clear(j.entries)
	j.entries = j.entries[:0]
}

// record saves what c's changes will overwrite. reducer.Apply replaces
// entities (and the History map) rather than editing them in place, so the
// old pointers are the old values.
func (j *journal) record(s *canvas.State, c *canvas.Commit) {
	j.entries = slices.Grow(j.entries, 1+len(c.Changes)) // an import's thousands at once
	j.entries = append(j.entries, journalEntry{rev: s.Rev, hist: s.History, isRev: true})
	for _, ch := range c.Changes {
		ref := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
		en := journalEntry{ref: ref}
		if ref.Kind == canvas.KindNode {
			en.node = s.Nodes[ch.ID]
		} else {
			en.edge = s.Edges[ch.ID]
		}
		en.tomb, en.hasTomb = s.Tombstones[ref]
		j.entries = append(j.entries, en)
	}
}

// rollback restores s to what it was at mark.
func (j *journal) rollback(s *canvas.State, mark int) {
	for i := len(j.entries) - 1; i >= mark; i-- {
		en := j.entries[i]
		if en.isRev {
			s.Rev, s.History = en.rev, en.hist
			continue
		}
		switch en.ref.Kind {
		case canvas.KindNode:
			if en.node != nil {
				s.Nodes[en.ref.ID] = en.node
			} else {
				delete(s.Nodes, en.ref.ID)
			}
		case canvas.KindEdge:
			s.SetEdge(en.ref.ID, en.edge) // nil: it did not exist
		}
		if en.hasTomb {
			s.Tombstones[en.ref] = en.tomb
		} else {
			delete(s.Tombstones, en.ref)
		}
	}
	j.entries = j.entries[:mark]
}
