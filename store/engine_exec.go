package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// maxIdemCache bounds the per-canvas in-memory idempotency cache; older keys
// are still answered from the store.
const maxIdemCache = 10000

// maxRecoveryScan bounds how far behind the head a 409's base_rev may be
// for recovery_ops to list the commits since (as far as a stream replays);
// further behind, the 409 says its recovery_ops are incomplete.
const maxRecoveryScan = 10000

// Execute decides and commits one command on a canvas for actor. It answers
// applied and conflicting commands and idempotent replays; other failures are
// errors (a *canvas.FieldError for an invalid or unprocessable command,
// canvas.ErrNotFound for an unknown canvas, canvas.ErrUnavailable). A
// rejected or conflicting command writes nothing.
func (e *Engine) Execute(ctx context.Context, canvasID string, actor canvas.Actor, env canvas.Envelope) (Answer, error) {
	if err := env.Validate(); err != nil {
		return Answer{}, err
	}
	r := &request{ctx: ctx, actor: actor, one: [1]canvas.Envelope{env}, baseRev: *env.BaseRev,
		idemKey: env.IdempotencyKey, start: time.Now()}
	r.envs = r.one[:]
	if r.idemKey != "" { // the fingerprint only tells replays from misuse of a key
		r.fp = env.Fingerprint()
	}
	if err := e.preload(ctx, canvasID, r); err != nil {
		return Answer{}, err
	}
	return e.submit(ctx, canvasID, r)
}

// writeDeadline bounds ctx by r's write deadline (EngineConfig.WriteTimeout
// after its arrival), if there is one.
func (e *Engine) writeDeadline(ctx context.Context, r *request) (context.Context, context.CancelFunc) {
	if d := e.cfg.WriteTimeout; d > 0 {
		return context.WithDeadline(ctx, r.start.Add(d))
	}
	return ctx, func() {}
}

// preload reads from the store, before r queues, the history each of its
// commands needs besides the canvas's current state, as its verb declares
// (canvas.VerbDef.History): what the commits a revert names changed
// (reducer.LoadRevert), the state at a named snapshot. The canvas's writer
// then decides without I/O, and the reading never holds up its lock. The
// log it reads does not change, so what it found stays true however the
// canvas moves on meanwhile; what it names must be in the log when the
// request arrives (not commits of the same batch). The spans of a batch's
// reverts count together against reducer.MaxRevertSpan, checked before
// anything is read, so one request never reads more of the log than one
// revert may.
func (e *Engine) preload(ctx context.Context, canvasID string, r *request) error {
	needs := false
	for k := range r.envs {
		needs = needs || canvas.VerbHistory(r.envs[k].Type) != canvas.NoHistory
	}
	if !needs { // most commands: nothing to read, no deadline to make
		return nil
	}
	ctx, cancel := e.writeDeadline(ctx, r) // part of the write: within its timeout
	defer cancel()
	field := func(k int, err error) error {
		if r.batch {
			return prefixField(err, fmt.Sprintf("commands[%d].", k))
		}
		return err
	}
	var revs [][]int64
	var span int64
	for k := range r.envs {
		if canvas.VerbHistory(r.envs[k].Type) != canvas.RevertedCommits {
			continue
		}
		rs, err := reducer.RevertRevs(r.envs[k].Args)
		if err != nil {
			return field(k, err)
		}
		if span += rs[len(rs)-1] - rs[0] + 1; span > reducer.MaxRevertSpan {
			return field(k, canvas.Unprocessable("args.revs", "the batch's revert_commits span %d commits together; a request reads at most %d: send them in separate requests",
				span, reducer.MaxRevertSpan))
		}
		if revs == nil {
			revs = make([][]int64, len(r.envs))
		}
		revs[k] = rs
	}
	for k := range r.envs {
		switch canvas.VerbHistory(r.envs[k].Type) {
		case canvas.RevertedCommits:
			base, err := e.loadRevert(ctx, canvasID, revs[k])
			if err != nil {
				return field(k, err)
			}
			if r.reverts == nil {
				r.reverts = make([]*canvas.RevertBase, len(r.envs))
			}
			r.reverts[k] = base
		case canvas.SnapshotState:
			s, err := e.snapshotState(ctx, canvasID, r.envs[k].Args)
			if err != nil {
				return field(k, err)
			}
			if r.snapshots == nil {
				r.snapshots = make([]*canvas.State, len(r.envs))
			}
			r.snapshots[k] = s
		}
	}
	return nil
}

// loadRevert reads what the commits at revs (ascending, reducer.RevertRevs) changed.
func (e *Engine) loadRevert(ctx context.Context, canvasID string, revs []int64) (*canvas.RevertBase, error) {
	s, _, err := e.loadState(ctx, canvasID, revs[0]-1)
	if err != nil {
		return nil, err
	}
	return reducer.LoadRevert(s, revs, func(afterRev int64, limit int) ([]canvas.Commit, error) {
		return e.st.ReadCommits(ctx, canvasID, afterRev, limit)
	})
}

// RevertChangesNothing reports whether a revert_commits of the commits at
// revs (ascending, as reducer.RevertRevs returns them) would change nothing
// on the canvas's current state (reducer.RevertChangesNothing), without
// committing. The canvas may move on after it answers: revert_commits
// decides on the state it commits on.
func (e *Engine) RevertChangesNothing(ctx context.Context, canvasID string, revs []int64) (bool, error) {
	base, err := e.loadRevert(ctx, canvasID, revs)
	if err != nil {
		return false, err
	}
	var nothing bool
	err = e.View(ctx, canvasID, -1, func(s *canvas.State, _ string) error {
		nothing = reducer.RevertChangesNothing(s, base)
		return nil
	})
	return nothing, err
}

// ExecuteBatch decides and commits envs all-or-nothing, one revision per
// command, each checked against baseRev (envelopes may omit base_rev). The
// batch's own idempotencyKey, if any, makes a retry return the stored answer;
// envelopes inside a batch must not carry keys of their own.
func (e *Engine) ExecuteBatch(ctx context.Context, canvasID string, actor canvas.Actor, baseRev int64, idempotencyKey string, envs []canvas.Envelope) (Answer, error) {
	if len(envs) == 0 {
		return Answer{}, canvas.Invalid("commands", "must hold at least one command")
	}
	if len(idempotencyKey) > canvas.MaxIdempotencyKeyLen {
		return Answer{}, canvas.Invalid("idempotency_key", "is longer than %d characters", canvas.MaxIdempotencyKeyLen)
	}
	fp := strings.Builder{}
	fp.WriteString("batch\x00" + strconv.FormatInt(baseRev, 10))
	for i := range envs {
		if envs[i].BaseRev == nil {
			envs[i].BaseRev = &baseRev
		}
		if err := envs[i].Validate(); err != nil {
			return Answer{}, prefixField(err, fmt.Sprintf("commands[%d].", i))
		}
		if envs[i].IdempotencyKey != "" {
			return Answer{}, canvas.Invalid(fmt.Sprintf("commands[%d].idempotency_key", i),
				"commands inside a batch cannot carry their own key; put one idempotency_key on the batch")
		}
		if idempotencyKey != "" {
			fp.WriteString("\x01" + envs[i].Fingerprint())
		}
	}
	r := &request{ctx: ctx, actor: actor, envs: envs, baseRev: baseRev, batch: true,
		idemKey: idempotencyKey, fp: fp.String(), start: time.Now()}
	if err := e.preload(ctx, canvasID, r); err != nil {
		return Answer{}, err
	}
	return e.submit(ctx, canvasID, r)
}

// submit queues r for the canvas's writer and waits for its answer. With a
// write timeout, r is answered by its deadline whatever the writer is busy
// with (a catch-up after an unknown outcome, another process's commits): a
// request the writer has not taken by then is withdrawn and answered 503,
// nothing written; one it has taken it answers itself, within the same
// deadline (process).
func (e *Engine) submit(ctx context.Context, canvasID string, r *request) (Answer, error) {
	r.done = make(chan Answer, 1)
	var expired <-chan struct{} // closed at r's write deadline; nil without a write timeout
	if d := e.cfg.WriteTimeout; d > 0 {
		dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), r.start.Add(d))
		defer cancel()
		expired = dctx.Done()
	}
	for {
		l, err := e.getUntil(ctx, canvasID, expired)
		if err != nil {
			if errors.Is(err, canvas.ErrUnavailable) && !errors.Is(err, canvas.ErrNotWritten) {
				err = fmt.Errorf("%w: %w", canvas.ErrNotWritten, err) // the canvas did not load: the command never ran
			}
			return Answer{}, err
		}
		select {
		case l.reqs <- r:
		case <-l.exited:
			continue // retired while idle: load it again
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		case <-expired:
			return Answer{}, e.notTaken(r, canvasID)
		}
		// Once queued, wait for the answer even if the client goes away: the
		// command may commit, and its idempotency key will say so on a retry.
		select {
		case resp, ok := <-r.done:
			if !ok {
				return Answer{}, r.err
			}
			return resp, r.err
		case <-expired:
			if r.withdraw() {
				return Answer{}, e.notTaken(r, canvasID)
			}
			// The writer took it just now: it answers within the deadline.
			if resp, ok := <-r.done; ok {
				return resp, r.err
			}
			return Answer{}, r.err
		case <-l.exited:
			select {
			case resp, ok := <-r.done:
				if ok {
					return resp, r.err
				}
				return Answer{}, r.err
			default: // queued after the writer stopped: it never ran
			}
			if l.isRetired() {
				continue
			}
			return Answer{}, fmt.Errorf("canvas %s is shutting down or was deleted: %w: %w", canvasID, canvas.ErrUnavailable, canvas.ErrNotWritten)
		}
	}
}

// notTaken is the error of a request withdrawn at its write deadline before
// the writer took it.
func (e *Engine) notTaken(r *request, canvasID string) error {
	e.observe(r, "error")
	return fmt.Errorf("canvas %s: the command could not be run within the write timeout (%v; the store is slow or unreachable): %w: %w",
		canvasID, e.cfg.WriteTimeout, canvas.ErrUnavailable, canvas.ErrNotWritten)
}

// Request states: queued until the writer takes it (then it runs and is
// answered by the writer) or its submitter withdraws it at its deadline
// (then the writer skips it).
const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

// take marks r as the writer's; false: its submitter withdrew it.
func (r *request) take() bool {
	return r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.Load() == reqTaken
}

// withdraw marks r as given up by its submitter; false: the writer took it.
func (r *request) withdraw() bool { return r.state.CompareAndSwap(reqQueued, reqWithdrawn) }

// pending is one request's answer being prepared within a group.
type pending struct {
	req      *request
	resp     Answer
	err      error
	commits  int // how many commits of the group are this request's
	follower int // index+1 of the request with the same idempotency key in this group
	results  []canvas.RevisionResult
	idem     *IdempotencyRecord
	outcome  string
	// Read from the store after the writer lets go of the canvas (settle):
	lookup   bool          // not applied, with a key: a stored answer of the key is its answer
	conflict *conflictRead // a conflict whose recovery_ops are older than the commits in memory
}

// conflictRead is a conflict answer whose recovery_ops come from the log:
// the commits after base through head (the last one stored before its
// group) that touch want (all when empty), then ops, the matching commits
// of its group decided before it.
type conflictRead struct {
	result     canvas.ConflictResult
	base, head int64
	want       map[canvas.Ref]bool
	ops        []canvas.Commit
}

// process commits a group of requests (taken by the writer) in one Append,
// retrying after a concurrent append by another process. It holds l.mu
// while it decides and appends (tryGroup), so readers never see an
// uncommitted state; the Append is the only I/O under it. The history its
// commands need was read before they queued (preload); the catch-ups and
// back-offs between attempts, and the reads that complete the answers
// (settle), run without it. Every store operation ends by the deadline of the group's oldest
// command.
func (e *Engine) process(ctx context.Context, l *live, group []*request) {
	// A group runs to its end even if l is retired meanwhile (a reader found
	// the canvas deleted or replaced): its store operations then fail as
	// such (404, or 503 nothing written), never as canceled.
	ctx = context.WithoutCancel(ctx)
	if e.cfg.WriteTimeout > 0 {
		var cancel context.CancelFunc
		if ctx, cancel, group = e.inTime(ctx, l, group); len(group) == 0 {
			return
		}
		defer cancel()
	}
	if err := e.catchUpToDecide(ctx, l, group); err != nil {
		e.failAll(group, err)
		return
	}
	deadline := time.Now().Add(contendedTimeout)
	confirmed := false
	for attempt := 0; ; attempt++ {
		l.mu.Lock()
		answers, appended, err := e.tryGroup(ctx, l, group)
		head := l.state.Rev
		l.mu.Unlock()
		if err == nil {
			e.settle(ctx, l, answers) // the store reads the answers need, without l.mu
		}
		switch {
		case err == nil && !appended && e.shared && !confirmed && refused(answers):
			// Decided on this process's copy alone (an append would have
			// confirmed the head): a 409's current_rev, or a 422 about a
			// node another process made, must not trail a commit
			// acknowledged through another process. Confirm the head in the
			// store; if it moved, catch up and decide again.
			confirmed = true
			stored, cerr := e.stillThere(ctx, l)
			if cerr == nil && stored > head {
				if cerr = e.catchUpTo(ctx, l, stored); cerr == nil {
					continue
				}
			}
			if isGone(cerr) {
				e.drop(l)
			}
			if cerr != nil {
				e.failAll(group, cerr)
				return
			}
			e.answer(answers)
			return
		case err == nil:
			e.answer(answers)
			return
		case errors.Is(err, canvas.ErrHeadMismatch):
			// Another process appended first: catch up and decide again. Back
			// off a little after a few rounds so the other writer's burst ends.
			if time.Now().After(deadline) {
				e.failAll(group, fmt.Errorf("canvas %s is too contended across processes (%d attempts); retry: %w", l.id, attempt+1, canvas.ErrUnavailable))
				return
			}
			if attempt >= 3 {
				// Without l.mu (readers go on meanwhile); the next round
				// catches up and decides again on what the canvas is then.
				if serr := e.cfg.Sleep(ctx, time.Duration(mrand.Int64N(int64(attempt)*int64(time.Millisecond)))); serr != nil {
					e.failAll(group, fmt.Errorf("canvas %s is contended across processes: %w: %w", l.id, serr, canvas.ErrUnavailable))
					return
				}
			}
			// The canvas may have been deleted and made again by a process
			// whose notice was missed: then its log is not ours to read.
			_, cerr := e.stillThere(ctx, l)
			if cerr == nil {
				cerr = e.catchUpTo(ctx, l, -1)
			}
			if isGone(cerr) {
				e.drop(l)
			}
			if cerr != nil {
				e.failAll(group, cerr)
				return
			}
		case errors.Is(err, canvas.ErrDuplicateIdempotencyKey) && len(group) > 1:
			// Another process committed one of these keys; settle them one by one.
			for _, r := range group {
				e.process(ctx, l, []*request{r})
			}
			return
		case errors.Is(err, canvas.ErrDuplicateIdempotencyKey):
			// The next attempt finds the key in the cache and replays it.
			if gerr := e.cacheStoredIdem(ctx, l, group[0].idemKey); gerr != nil {
				e.failAll(group, gerr)
				return
			}
		default:
			e.failAll(group, err)
			return
		}
	}
}

// inTime bounds the whole write of group by the write timeout, the wait
// behind this canvas's earlier groups included: the commands that waited it
// out are answered without running, and the group's store operations end
// by the deadline of its oldest command (the context returned, to be
// canceled by the caller). It returns the commands still in time (none: the
// context is nil).
func (e *Engine) inTime(ctx context.Context, l *live, group []*request) (context.Context, context.CancelFunc, []*request) {
	d := e.cfg.WriteTimeout
	now := time.Now()
	var oldest time.Time
	kept := group[:0:0]
	for _, r := range group {
		if now.Sub(r.start) >= d {
			e.failAll([]*request{r}, fmt.Errorf("canvas %s: the command waited %v behind earlier writes (the write timeout is %v): %w: %w",
				l.id, now.Sub(r.start).Round(time.Millisecond), d, canvas.ErrUnavailable, canvas.ErrNotWritten))
			continue
		}
		if oldest.IsZero() || r.start.Before(oldest) {
			oldest = r.start
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return nil, nil, nil
	}
	ctx, cancel := context.WithDeadline(ctx, oldest.Add(d))
	return ctx, cancel, kept
}

// catchUpToDecide reads l's log before group is decided when l's copy may
// be behind: after an append whose outcome is unknown (it may have
// committed), or when a command's base_rev is ahead of the copy's head
// (another process may have committed it, and this one not heard yet).
func (e *Engine) catchUpToDecide(ctx context.Context, l *live, group []*request) error {
	if l.unsure {
		if err := e.catchUpTo(ctx, l, -1); err != nil {
			return err
		}
		l.unsure = false
	}
	l.mu.RLock()
	head := l.state.Rev
	l.mu.RUnlock()
	for _, r := range group {
		if r.baseRev > head {
			return e.catchUpTo(ctx, l, -1)
		}
	}
	return nil
}

// cacheStoredIdem reads the stored answer of idempotency key key into l's
// cache (the caller must not hold l.mu).
func (e *Engine) cacheStoredIdem(ctx context.Context, l *live, key string) error {
	rec, err := e.st.GetIdempotency(ctx, l.id, key)
	if err != nil {
		return err
	}
	l.mu.Lock()
	e.cacheIdem(l, &rec)
	l.mu.Unlock()
	return nil
}

// refused reports whether a group's answers hold a conflict or a refusal.
func refused(answers []*pending) bool {
	for _, p := range answers {
		if p.outcome == "conflict" || p.outcome == "rejected" {
			return true
		}
	}
	return false
}

// contendedTimeout bounds how long a group keeps retrying after other
// processes appended first; then its commands get a 503 (nothing written).
const contendedTimeout = 3 * time.Second

func (e *Engine) failAll(group []*request, err error) {
	if errors.Is(err, canvas.ErrUnavailable) && !errors.Is(err, canvas.ErrOutcomeUnknown) && !errors.Is(err, canvas.ErrNotWritten) {
		// Only an append can write, and its failures are marked unknown
		// unless the store knows better (tryGroup): any other failure
		// wrote nothing.
		err = fmt.Errorf("%w: %w", canvas.ErrNotWritten, err)
	}
	for _, r := range group {
		r.err = err
		close(r.done)
		e.observe(r, "error")
	}
}

func (e *Engine) answer(answers []*pending) {
	for _, p := range answers {
		p.req.err = p.err
		if p.err != nil {
			close(p.req.done)
		} else {
			p.req.done <- p.resp
		}
		e.observe(p.req, p.outcome)
	}
}

func (e *Engine) observe(r *request, outcome string) {
	if e.cfg.Observer == nil {
		return
	}
	t := "batch"
	if !r.batch {
		t = r.envs[0].Type
	}
	e.cfg.Observer.CommandDone(t, outcome, time.Since(r.start))
}

// tryGroup decides every request of the group against the in-memory state,
// appends all resulting commits in one transaction, and on success publishes
// them and returns the answers, and whether it appended anything. On
// failure the state is rolled back. The caller holds l.mu.
func (e *Engine) tryGroup(ctx context.Context, l *live, group []*request) ([]*pending, bool, error) {
	headBefore := l.state.Rev
	j := &l.journal
	defer j.reset()
	var commits []canvas.Commit
	var idems []IdempotencyRecord
	// The answers' room is the writer's, reused by every group (a group is
	// answered before the next one is decided).
	if cap(l.pend) < len(group) {
		l.pend, l.answers = make([]pending, len(group)), make([]*pending, len(group))
	}
	ps, answers := l.pend[:len(group)], l.answers[:len(group)]
	clear(ps)
	var keyOwner map[string]int // request index by idempotency key, made for the first key
	for i, r := range group {
		p := &ps[i]
		p.req = r
		answers[i] = p
		if r.idemKey != "" {
			if rec, ok := l.idem[r.idemKey]; ok {
				e.replay(p, rec)
				continue
			}
			if o, ok := keyOwner[r.idemKey]; ok {
				switch {
				case group[o].fp == r.fp:
					p.follower = o + 1
					continue
				case ps[o].idem != nil: // the key is taken by the earlier command
					p.err = idemMismatch(r.idemKey, 0)
					p.outcome = "rejected"
					continue
				}
				// The earlier command with this key stored nothing (a
				// conflict, a refusal): the key is free for this one.
			}
			if keyOwner == nil {
				keyOwner = map[string]int{}
			}
			keyOwner[r.idemKey] = i
		}
		mark := j.mark()
		reqStart := l.state.Rev
		firstCommit := len(commits)
		p.outcome = "applied"
		for k := range r.envs {
			c, res, err := e.decideOne(ctx, l, r, k, reqStart, j, commits)
			if err != nil {
				j.rollback(l.state, mark)
				commits = commits[:firstCommit]
				p.refuse(err, k)
				break
			}
			commits = append(commits, *c)
			p.results = append(p.results, res)
			p.commits++
		}
		if p.commits == 0 {
			// Not applied now: if the key was committed earlier (by another
			// process, or before a restart, or beyond the cache), that stored
			// answer is the answer (settle reads it).
			p.lookup = r.idemKey != ""
			continue
		}
		e.answerApplied(l, p)
		if p.idem != nil {
			idems = append(idems, *p.idem)
		}
	}
	if len(commits) == 0 {
		return answers, false, nil
	}
	if err := e.st.Append(ctx, l.id, headBefore, commits, idems); err != nil {
		j.rollback(l.state, 0)
		if errors.Is(err, canvas.ErrUnavailable) && !errors.Is(err, canvas.ErrNotWritten) && !errors.Is(err, canvas.ErrOutcomeUnknown) {
			// The store does not say the append never happened (an I/O
			// error at commit, say): it may have.
			err = fmt.Errorf("%w: %w", canvas.ErrOutcomeUnknown, err)
		}
		if errors.Is(err, canvas.ErrOutcomeUnknown) {
			l.unsure = true
		}
		return nil, false, err
	}
	for i := range commits {
		e.committed(l, &commits[i])
	}
	for _, p := range answers {
		if p.idem != nil {
			e.cacheIdem(l, p.idem)
		}
	}
	e.maybeSnapshot(l)
	return answers, true, nil
}

// refuse makes p the answer of a request whose k-th command was not
// applied (err): a conflict (its recovery_ops read from the log later, by
// settle, when err is a *conflictRead) or a rejection, whose field a
// batch's answer prefixes with the command's place.
func (p *pending) refuse(err error, k int) {
	p.results, p.commits = nil, 0
	var ce *canvas.ConflictError
	var cr *conflictRead
	switch {
	case errors.As(err, &cr):
		p.conflict, p.outcome = cr, "conflict"
	case errors.As(err, &ce):
		p.resp = Answer{Outcome: OutcomeConflict, Result: mustJSON(ce.Result)}
		p.outcome = "conflict"
	default:
		if p.req.batch {
			err = prefixField(err, fmt.Sprintf("commands[%d].", k))
		}
		p.err = err
		p.outcome = "rejected"
	}
}

// answerApplied makes p the answer of a request whose commands all
// applied (l's head is its last commit), and its idempotency record when
// it has a key.
func (e *Engine) answerApplied(l *live, p *pending) {
	r := p.req
	if r.batch {
		p.resp = Answer{Outcome: OutcomeApplied, Result: mustJSON(BatchResult{Status: canvas.StatusApplied,
			CurrentRev: l.state.Rev, Results: p.results})}
	} else {
		res, err := p.results[0].AppendJSON(make([]byte, 0, 192))
		if err != nil {
			panic(fmt.Sprintf("encoding response: %v", err)) // our own types always encode
		}
		p.resp = Answer{Outcome: OutcomeApplied, Result: res}
	}
	if r.idemKey != "" {
		p.idem = &IdempotencyRecord{CanvasID: l.id, Key: r.idemKey, Fingerprint: r.fp,
			Outcome: p.resp.Outcome, Result: p.resp.Result, Rev: l.state.Rev, CreatedAt: e.cfg.Now().UTC()}
	}
}

// settle completes a group's answers once the writer has let go of the
// canvas (the caller must not hold l.mu): the store reads they need (the
// stored answer of a key whose command was not applied, recovery_ops older
// than the commits in memory), then the answers of the requests that
// repeat an earlier one's key. What is read is committed already and does
// not change. A read that fails fails its request alone (503, nothing of
// it written).
func (e *Engine) settle(ctx context.Context, l *live, answers []*pending) {
	for _, p := range answers {
		if p.conflict != nil {
			p.resp = Answer{Outcome: OutcomeConflict, Result: mustJSON(e.readConflict(ctx, l.id, p.conflict))}
			p.conflict = nil
		}
		if !p.lookup {
			continue
		}
		p.lookup = false
		if storedByGroup(answers, p.req.idemKey) {
			// A later command of the group took the key, and its Append
			// succeeded: the store did not hold it before.
			continue
		}
		rec, err := e.st.GetIdempotency(ctx, l.id, p.req.idemKey)
		switch {
		case err == nil:
			l.mu.Lock()
			e.cacheIdem(l, &rec)
			l.mu.Unlock()
			p.err, p.resp = nil, Answer{}
			e.replay(p, &rec)
		case !errors.Is(err, canvas.ErrNotFound):
			if errors.Is(err, canvas.ErrUnavailable) && !errors.Is(err, canvas.ErrNotWritten) {
				err = fmt.Errorf("%w: %w", canvas.ErrNotWritten, err)
			}
			p.err, p.resp, p.outcome = err, Answer{}, "error"
		}
	}
	for _, p := range answers {
		if p.follower > 0 {
			o := answers[p.follower-1]
			p.resp, p.err, p.outcome = o.resp, o.err, o.outcome
			if o.idem != nil {
				p.resp.Replayed, p.outcome = true, "replayed"
			}
		}
	}
}

// storedByGroup reports whether a command of the group stored key.
func storedByGroup(answers []*pending, key string) bool {
	for _, p := range answers {
		if p.idem != nil && p.idem.Key == key {
			return true
		}
	}
	return false
}

// readConflict reads the recovery_ops of c from the log.
func (e *Engine) readConflict(ctx context.Context, canvasID string, c *conflictRead) canvas.ConflictResult {
	res := c.result
	ops := []canvas.Commit{}
	for from := c.base; from < c.head; {
		commits, err := e.st.ReadCommits(ctx, canvasID, from, int(min(c.head-from, 1000)))
		if err == nil && len(commits) == 0 {
			err = fmt.Errorf("log of canvas %s ends at rev %d, before %d", canvasID, from, c.head)
		}
		if err != nil {
			e.log.Warn("reading the commits of a conflict's recovery_ops failed", "canvas", canvasID, "err", err)
			res.RecoveryOpsIncomplete = true
			res.Suggestion = fmt.Sprintf("the commits since base_rev could not be read for recovery_ops: re-read the canvas (GET /canvas_commands/snapshot/%s), then re-plan. %s",
				canvasID, res.Suggestion)
			ops = ops[:0]
			break
		}
		for i := range commits {
			if commits[i].Rev > c.head {
				break
			}
			if len(c.want) == 0 || commits[i].Touches(c.want) {
				ops = append(ops, commits[i])
			}
		}
		from = commits[len(commits)-1].Rev
	}
	res.RecoveryOps = append(ops, c.ops...)
	return res
}

// Error makes a conflictRead the error that decideOne returns for it.
func (c *conflictRead) Error() string { return "conflict: " + c.result.Suggestion }

func (e *Engine) replay(p *pending, rec *IdempotencyRecord) {
	if rec.Fingerprint != p.req.fp {
		p.err = idemMismatch(rec.Key, rec.Rev)
		p.outcome = "rejected"
		return
	}
	p.resp = Answer{Outcome: rec.Outcome, Result: rec.Result, Replayed: true}
	p.outcome = "replayed"
}

func idemMismatch(key string, rev int64) error {
	at := ""
	if rev > 0 {
		at = fmt.Sprintf(" (it committed rev %d)", rev)
	}
	return canvas.Unprocessable("idempotency_key",
		"%q was already used for a different command%s; use a new key for a new command", key, at)
}

// decideOne decides envelope k of r against the working state and, when it
// applies, applies it (journaled) and returns its commit.
func (e *Engine) decideOne(ctx context.Context, l *live, r *request, k int, reqStart int64, j *journal, pendingCommits []canvas.Commit) (*canvas.Commit, canvas.RevisionResult, error) {
	env := r.envs[k]
	base := *env.BaseRev
	if r.batch {
		base = r.baseRev
	}
	var seed [14]byte
	_, _ = rand.Read(seed[:])
	cmdID := env.ID
	if cmdID == "" {
		var b [4 + 12]byte
		copy(b[:], "cmd_")
		hex.Encode(b[4:], seed[8:])
		cmdID = string(b[:])
	}
	rev := l.state.Rev + 1
	cmd := canvas.Command{CanvasID: l.id, ID: cmdID, Type: env.Type, BaseRev: base, Strict: env.Strict,
		Args: env.Args, Actor: r.actor, Rev: rev, TS: e.cfg.Now().UTC(), Seed: hex.EncodeToString(seed[:4])}
	if base > reqStart {
		return nil, canvas.RevisionResult{}, e.conflict(l, cmd, reqStart, nil, pendingCommits,
			fmt.Sprintf("base_rev %d is ahead of the head (%d): re-read the snapshot and resend with its head_rev", base, reqStart))
	}
	if r.reverts != nil {
		cmd.Revert = r.reverts[k] // read from the log before the request queued (preload)
	}
	if r.snapshots != nil {
		cmd.Snapshot = r.snapshots[k] // likewise
	}
	dec, err := reducer.Decide(l.state, cmd)
	stale := base < reqStart
	if stale {
		var conflicting []canvas.Ref
		seen := map[canvas.Ref]bool{}
		for _, ref := range dec.Touched {
			if at := l.state.ChangedAt(ref); at > base && at <= reqStart && !seen[ref] {
				seen[ref] = true
				conflicting = append(conflicting, ref)
			}
		}
		if len(conflicting) > 0 || env.Strict {
			why := "entities this command touches changed after base_rev"
			if len(conflicting) == 0 {
				why = "strict is set and base_rev is stale"
			}
			return nil, canvas.RevisionResult{}, e.conflict(l, cmd, reqStart, conflicting, pendingCommits,
				why+": re-read the state (or apply recovery_ops), re-plan, and resend with the new base_rev")
		}
	}
	if undoConflict := conflictOf(err); undoConflict != nil && len(undoConflict.Result.RecoveryOps) == 0 {
		// docs: undo/redo refused because others changed what it would restore;
		// recovery_ops are the commits after the entry's revision that touched them.
		ids := map[string]bool{}
		for _, id := range undoConflict.Result.ConflictingIDs {
			ids[id] = true
		}
		var refs []canvas.Ref
		for _, ref := range dec.Touched {
			if ids[ref.ID] {
				refs = append(refs, ref)
			}
		}
		at := cmd
		at.BaseRev = undoConflict.Result.BaseRev
		return nil, canvas.RevisionResult{}, e.conflict(l, at, reqStart, refs, pendingCommits, undoConflict.Result.Suggestion)
	}
	if err != nil {
		return nil, canvas.RevisionResult{}, err
	}
	var seedEvt [6]byte
	_, _ = rand.Read(seedEvt[:])
	var evt [20 + 1 + 12]byte
	eventID := strconv.AppendInt(evt[:0], rev, 10)
	eventID = hex.AppendEncode(append(eventID, '-'), seedEvt[:])
	c := &canvas.Commit{CanvasID: l.id, EventID: string(eventID),
		Rev: rev, CmdID: cmdID, Type: env.Type, Args: env.Args, ActorID: r.actor.ID, ActorType: r.actor.Type,
		TS: cmd.TS, Changes: dec.Changes}
	if c.Changes == nil {
		c.Changes = []canvas.Change{}
	}
	// Encoded once: the log, SSE and the events endpoints share the bytes.
	if err := c.Encode(); err != nil {
		return nil, canvas.RevisionResult{}, canvas.Unprocessable("args", "the resulting commit cannot be encoded: %v", err)
	}
	j.record(l.state, c)
	if err := reducer.ApplyDecision(l.state, c, &dec); err != nil {
		return nil, canvas.RevisionResult{}, fmt.Errorf("applying decided changes: %w", err)
	}
	created := dec.CreatedIDs
	if created == nil {
		created = []string{}
	}
	return c, canvas.RevisionResult{Status: canvas.StatusApplied, CurrentRev: rev, CmdID: cmdID,
		EventID: c.EventID, CreatedIDs: created, Rebased: stale, Result: dec.Result}, nil
}

// conflictOf returns err's *canvas.ConflictError, or nil (without
// allocating when err is nil, as it is on the hot path).
func conflictOf(err error) *canvas.ConflictError {
	if err == nil {
		return nil
	}
	var ce *canvas.ConflictError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// conflict builds the 409 answer: the commits after base_rev that touched
// the conflicting entities (all commits after base_rev when none are named).
// The caller holds l.mu: when the commits in memory do not reach back to
// base_rev, it returns a *conflictRead, whose recovery_ops are read from
// the log after the writer lets go of the canvas (settle).
func (e *Engine) conflict(l *live, cmd canvas.Command, head int64, refs []canvas.Ref, pendingCommits []canvas.Commit, suggestion string) error {
	ids := make([]string, 0, len(refs))
	want := map[canvas.Ref]bool{}
	for _, r := range refs {
		want[r] = true
		ids = append(ids, r.ID)
	}
	sort.Strings(ids)
	ops := []canvas.Commit{}
	incomplete := false
	var read *conflictRead
	if cmd.BaseRev < head {
		if behind := head - cmd.BaseRev; behind > maxRecoveryScan {
			incomplete = true
			suggestion = fmt.Sprintf("base_rev %d is %d commits behind the head, more than recovery_ops lists (%d), so it lists none: re-read the canvas (GET /canvas_commands/snapshot/%s), then re-plan. %s",
				cmd.BaseRev, behind, maxRecoveryScan, l.id, suggestion)
		} else if after, ok := l.recentAfter(cmd.BaseRev, int(behind)); ok {
			for _, c := range after {
				if len(want) == 0 || c.Touches(want) {
					ops = append(ops, *c)
				}
			}
		} else {
			// The log holds the commits up to the group's first (the
			// group's own come from pendingCommits).
			stored := head
			if len(pendingCommits) > 0 {
				stored = min(stored, pendingCommits[0].Rev-1)
			}
			read = &conflictRead{base: cmd.BaseRev, head: stored, want: want}
		}
		for i := range pendingCommits {
			if len(want) == 0 || pendingCommits[i].Touches(want) {
				ops = append(ops, pendingCommits[i])
			}
		}
	}
	res := canvas.ConflictResult{Status: canvas.StatusConflict, CurrentRev: head,
		BaseRev: cmd.BaseRev, ConflictingIDs: ids, RecoveryOps: ops, RecoveryOpsIncomplete: incomplete, Suggestion: suggestion}
	if read != nil {
		read.result, read.ops = res, ops
		return read
	}
	return &canvas.ConflictError{Result: res}
}

func (e *Engine) cacheIdem(l *live, rec *IdempotencyRecord) {
	if _, ok := l.idem[rec.Key]; !ok {
		l.idemOrder = append(l.idemOrder, rec.Key)
	}
	l.idem[rec.Key] = rec
	if len(l.idemOrder) > maxIdemCache+maxIdemCache/4 { // evict in chunks: amortized O(1)
		drop := len(l.idemOrder) - maxIdemCache
		for _, k := range l.idemOrder[:drop] {
			delete(l.idem, k)
		}
		n := copy(l.idemOrder, l.idemOrder[drop:])
		clear(l.idemOrder[n:])
		l.idemOrder = l.idemOrder[:n]
	}
}

// BatchResult is the result document of an applied batch: one
// canvas.RevisionResult per command, in order.
type BatchResult struct {
	Status     string                  `json:"status"`
	CurrentRev int64                   `json:"current_rev"`
	Results    []canvas.RevisionResult `json:"results"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding response: %v", err)) // our own types always encode
	}
	return b
}

func prefixField(err error, prefix string) error {
	var fe *canvas.FieldError
	if errors.As(err, &fe) {
		c := *fe
		c.Field = prefix + fe.Field
		return &c
	}
	return err
}

// snapshotState loads the canvas state at the named snapshot that
// revert_to_snapshot args name (docs: reducer.RevertSnapshotID).
func (e *Engine) snapshotState(ctx context.Context, canvasID string, args json.RawMessage) (*canvas.State, error) {
	id, err := reducer.RevertSnapshotID(args)
	if err != nil {
		return nil, err
	}
	snap, err := e.st.GetNamedSnapshot(ctx, canvasID, id)
	if errors.Is(err, canvas.ErrNotFound) {
		if _, cerr := e.st.GetCanvas(ctx, canvasID); cerr != nil {
			return nil, cerr // no such canvas (404), or the store failed
		}
		return nil, canvas.Unprocessable("args.snapshot_id", "no snapshot %q on this canvas; list them with GET /api/canvases/%s/snapshots", id, canvasID)
	}
	if err != nil {
		return nil, err
	}
	s, _, err := e.stateAt(ctx, canvasID, snap.Rev)
	return s, err
}
