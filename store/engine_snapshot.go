package store

import (
	"context"
	"errors"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// State snapshots (reducer/snapshot.go has the format). Every SnapshotEvery
// commits a canvas's writer captures a delta: the entities its commits
// changed since the previous snapshot and the undo histories that differ,
// which costs what changed, pointers only. The engine's snapshotter
// goroutine encodes and stores it, so the writer never pays for the
// canvas's size. A snapshot whose base is not stored is never stored (the
// chain a load follows stays whole), and when a store fails the writer's
// next capture is whole again. When the chain (the last whole snapshot and
// the deltas since) holds twice the records the canvas has, so that half of
// what a cold load would read is superseded, or there are maxDeltas deltas,
// the snapshotter also merges the chain into a whole snapshot stored at the
// same revision (replacing the delta; reducer.MergeSnapshots copies records
// without decoding them), which bounds what a cold load reads and merges.
// A canvas that only grows is thus not rewritten at every doubling: its
// deltas hold nothing a merge would drop.

// maxDeltas bounds the deltas after a whole snapshot before they are merged.
const maxDeltas = 32

// snapshotQueue bounds the captures waiting for the snapshotter; a writer
// that finds it full captures again after its next commit.
const snapshotQueue = 64

// chainStats describes the chain of stored snapshots a live canvas's next
// delta will extend: how many deltas follow the last whole snapshot, and
// the records of each part.
type chainStats struct {
	deltas       int
	deltaRecords int
	wholeRecords int
}

// snapJob is one capture for the snapshotter.
type snapJob struct {
	l       *live
	eventID string // of the commit at the capture's revision
	capture *reducer.SnapshotCapture
	base    int64
	merge   bool // merge the chain ending here into a whole snapshot
}

// maybeSnapshot captures a snapshot of l every SnapshotEvery commits and
// queues it for the snapshotter. The caller holds l.mu.
func (e *Engine) maybeSnapshot(l *live) {
	if l.state.Rev-l.snapRev < e.cfg.SnapshotEvery {
		return
	}
	j := snapJob{l: l, eventID: l.headEventID, base: l.snapRev}
	if l.snapBroken.Load() {
		j.base = 0
		j.capture = reducer.CaptureWhole(l.state)
	} else {
		j.capture = reducer.CaptureDelta(l.state, l.snapRev, l.changed, l.snapHist)
	}
	next := l.chain
	switch {
	case j.base == 0:
		next = chainStats{wholeRecords: j.capture.Records()}
	default:
		next.deltas++
		next.deltaRecords += j.capture.Records()
		live := len(l.state.Nodes) + len(l.state.Edges) + len(l.state.Tombstones) + len(l.state.History)
		if next.deltas >= maxDeltas || next.wholeRecords+next.deltaRecords >= 2*live {
			j.merge = true
			next = chainStats{wholeRecords: live}
		}
	}
	select {
	case e.snaps <- j:
	default:
		return // the snapshotter is behind: capture again after the next commit
	}
	l.snapRev, l.snapHist, l.chain = l.state.Rev, l.state.History, next
	clear(l.changed)
}

// snapshotter encodes and stores the queued captures, in order, until the
// engine stops; then it stores what is queued and returns.
func (e *Engine) snapshotter() {
	defer e.wg.Done()
	for {
		select {
		case j := <-e.snaps:
			e.storeSnapshot(j)
		case <-e.ctx.Done():
			for {
				select {
				case j := <-e.snaps:
					e.storeSnapshot(j)
				default:
					return
				}
			}
		}
	}
}

// storeSnapshot encodes and stores one capture (and merges its chain when
// asked). A delta whose base may be missing (an earlier store of this live
// canvas failed) is dropped; a failure makes the writer capture whole next.
func (e *Engine) storeSnapshot(j snapJob) {
	l := j.l
	if j.base != 0 && l.snapBroken.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 30*time.Second)
	defer cancel()
	rev := j.capture.Rev()
	data, err := j.capture.Encode()
	if err == nil {
		err = e.st.SaveStateSnapshot(ctx, l.id, StateSnapshot{Rev: rev, Schema: reducer.Schema, Data: data, EventID: j.eventID})
	}
	if err != nil {
		l.snapBroken.Store(true)
		e.log.Warn("storing state snapshot", "canvas", l.id, "rev", rev, "err", err)
		return
	}
	if j.base == 0 {
		l.snapBroken.Store(false)
	}
	if !j.merge {
		return
	}
	chain, err := e.loadChain(ctx, l.id, rev)
	if err == nil && len(chain) > 1 {
		var whole []byte
		if whole, err = reducer.MergeSnapshots(chain...); err == nil {
			err = e.st.SaveStateSnapshot(ctx, l.id, StateSnapshot{Rev: rev, Schema: reducer.Schema, Data: whole, EventID: j.eventID})
		}
	}
	if err != nil { // the deltas stay: loads merge them, and a later merge retries
		e.log.Warn("merging state snapshots", "canvas", l.id, "rev", rev, "err", err)
	}
}

// loadChain returns the stored snapshots that make up the state at the
// latest snapshot at or before rev, oldest (whole) first. It returns nil
// when there is none of the current schema or its chain is broken.
func (e *Engine) loadChain(ctx context.Context, canvasID string, rev int64) ([][]byte, error) {
	var chain [][]byte
	want := int64(-1) // the revision the next snapshot must have (-1: any at or before rev)
	for {
		snap, err := e.st.LoadStateSnapshot(ctx, canvasID, rev)
		if errors.Is(err, canvas.ErrNotFound) && want < 0 {
			return nil, nil
		}
		if err != nil && !errors.Is(err, canvas.ErrNotFound) {
			return nil, err
		}
		if err != nil || want >= 0 && snap.Rev != want || snap.Schema != reducer.Schema {
			e.log.Info("ignoring state snapshots: missing or another schema", "canvas", canvasID, "rev", rev, "found", snap.Rev, "schema", snap.Schema)
			return nil, nil
		}
		_, base, _, herr := reducer.SnapshotHeader(snap.Data)
		if herr != nil {
			e.log.Warn("ignoring an unreadable state snapshot", "canvas", canvasID, "rev", snap.Rev, "err", herr)
			return nil, nil
		}
		chain = append(chain, snap.Data)
		if base == 0 {
			break
		}
		rev, want = base, base
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
}

// loadState returns the state of the latest stored snapshot at or before
// rev, decoded from its chain, and the chain's statistics; the empty state
// when there is none usable.
func (e *Engine) loadState(ctx context.Context, canvasID string, rev int64) (*canvas.State, chainStats, error) {
	chain, err := e.loadChain(ctx, canvasID, rev)
	if err != nil || chain == nil {
		return canvas.NewState(), chainStats{}, err
	}
	s, err := reducer.DecodeState(chain...)
	if err != nil {
		e.log.Warn("ignoring unreadable state snapshots", "canvas", canvasID, "rev", rev, "err", err)
		return canvas.NewState(), chainStats{}, nil
	}
	var st chainStats
	for i, data := range chain {
		_, _, n, _ := reducer.SnapshotHeader(data)
		if i == 0 {
			st.wholeRecords = n
		} else {
			st.deltas++
			st.deltaRecords += n
		}
	}
	return s, st, nil
}
