package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// surface is one A2UI surface as the host keeps it.
type surface struct {
	ID         string                     `json:"id"`
	Order      []string                   `json:"order"`      // component ids, first-definition order
	Components map[string]json.RawMessage `json:"components"` // id → the {id, component, weight?} object
	Refs       map[string][]ComponentRef  `json:"-"`          // rebuilt on load
	Root       string                     `json:"root,omitempty"`
	Styles     json.RawMessage            `json:"styles,omitempty"`
	CatalogID  string                     `json:"catalogId,omitempty"`
	Rendering  bool                       `json:"rendering"`
	Data       map[string]any             `json:"data"`
}

// sessionState caches a session's surfaces as decoded from the store at
// version; mu serializes this process's writers of the session (writers of
// other processes are kept out by the store's version check).
type sessionState struct {
	users    int // guarded by Host.mu: calls between lockState and unlockState
	mu       sync.Mutex
	loaded   bool
	version  int64    // the store's state version these surfaces are
	order    []string // surface ids in creation order
	surfaces map[string]*surface
}

// persisted is the state document kept in the store.
type persisted struct {
	Version  int        `json:"version"`
	Surfaces []*surface `json:"surfaces"`
}

// maxSaveWait bounds how long a push (or reset) goes on deciding again
// because other processes keep saving the session's state first; between
// attempts it backs off for a random 1 ms to 20 ms.
const maxSaveWait = 3 * time.Second

// maxIdleStates bounds the sessions whose decoded state is kept while
// nothing uses it (the store has it; the next use reads it again).
const maxIdleStates = 64

// lockState returns session's state, locked and counted as in use; the
// caller ends with unlockState.
func (h *Host) lockState(session string) *sessionState {
	h.mu.Lock()
	st := h.sessions[session]
	if st == nil {
		st = &sessionState{surfaces: map[string]*surface{}}
		h.sessions[session] = st
	}
	st.users++
	h.mu.Unlock()
	st.mu.Lock()
	return st
}

// unlockState unlocks st; once more than maxIdleStates sessions are kept,
// the unused ones are dropped.
func (h *Host) unlockState(st *sessionState) {
	st.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.users--; st.users == 0 && len(h.sessions) > maxIdleStates {
		for name, o := range h.sessions {
			if o.users == 0 {
				delete(h.sessions, name)
			}
		}
	}
}

// loadLocked brings st up to the store's current state (decoding only when
// the version moved). A corrupt document is logged and ignored (the session
// starts empty) rather than making the session unusable.
func (h *Host) loadLocked(ctx context.Context, session string, st *sessionState) error {
	v, b, err := h.store.LoadHostState(ctx, session)
	if err != nil {
		return err
	}
	if st.loaded && v == st.version {
		return nil
	}
	st.loaded, st.version = true, v
	st.surfaces, st.order = map[string]*surface{}, nil
	if len(b) == 0 {
		return nil
	}
	var p persisted
	if err := canvas.UnmarshalExact(b, &p); err != nil { // data model numbers stay exact
		h.log.Warn("host: corrupt a2ui state ignored", "session", session, "err", err)
		return nil
	}
	for _, s := range p.Surfaces {
		if s == nil || s.ID == "" {
			continue
		}
		if s.Components == nil {
			s.Components = map[string]json.RawMessage{}
		}
		if s.Data == nil {
			s.Data = map[string]any{}
		}
		s.Refs = map[string][]ComponentRef{}
		// Recompute references from the stored component definitions.
		for _, id := range s.Order {
			line := []byte(`{"surfaceUpdate":{"surfaceId":"x","components":[` + string(s.Components[id]) + `]}}`)
			if msgs, err := ParseA2UI(line, 1); err == nil && len(msgs[0].Components) == 1 {
				s.Refs[id] = msgs[0].Components[0].Refs
			}
		}
		st.surfaces[s.ID] = s
		st.order = append(st.order, s.ID)
	}
	return nil
}

// saveLocked stores surfaces (in order) as the session's next state version
// and makes them st's. canvas.ErrHeadMismatch means another process saved
// first: load and decide again.
func (h *Host) saveLocked(ctx context.Context, session string, st *sessionState, surfaces map[string]*surface, order []string) error {
	var b []byte
	if len(order) > 0 {
		p := persisted{Version: 1}
		for _, id := range order {
			p.Surfaces = append(p.Surfaces, surfaces[id])
		}
		var err error
		if b, err = json.Marshal(p); err != nil {
			return fmt.Errorf("host: encode a2ui state: %w", err)
		}
		if int64(len(b)) > h.cfg.MaxStateBytes {
			return fmt.Errorf("the session's surfaces would take %d bytes, over the limit of %d; delete surfaces (deleteSurface) or send smaller data models: %w",
				len(b), h.cfg.MaxStateBytes, canvas.ErrTooLarge)
		}
	}
	if err := h.store.SaveHostState(ctx, session, st.version, b); err != nil {
		return err
	}
	st.version++
	st.surfaces, st.order = surfaces, order
	return nil
}

// raced reports whether a save lost the race to another process (err is
// canvas.ErrHeadMismatch) and there is time to decide again, after backing
// off; after maxSaveWait it turns err into a conflict.
func raced(session string, start time.Time, err *error) bool {
	if !errors.Is(*err, canvas.ErrHeadMismatch) {
		return false
	}
	if time.Since(start) > maxSaveWait {
		*err = fmt.Errorf("%w: the surfaces of session %q kept changing through other servers for %v while this request was applied; retry",
			canvas.ErrConflict, session, maxSaveWait)
		return false
	}
	time.Sleep(time.Millisecond + rand.N(19*time.Millisecond))
	return true
}

func cloneSurface(s *surface) *surface {
	c := *s
	c.Order = append([]string(nil), s.Order...)
	c.Components = make(map[string]json.RawMessage, len(s.Components))
	for k, v := range s.Components {
		c.Components[k] = v
	}
	c.Refs = make(map[string][]ComponentRef, len(s.Refs))
	for k, v := range s.Refs {
		c.Refs[k] = v
	}
	c.Data = deepCopyMap(s.Data)
	return &c
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out[k] = deepCopyMap(sub)
		} else {
			out[k] = v
		}
	}
	return out
}

// PushResult reports an applied A2UI push.
type PushResult struct {
	Applied  int      `json:"applied"`  // messages applied
	Surfaces []string `json:"surfaces"` // ids of the surfaces the push touched, sorted
	Browsers int      `json:"browsers"` // subscribers that received the messages
}

// PushA2UI validates a JSONL body of A2UI v0.8 messages as a whole and, only
// when every line is good, applies it to the session's surfaces, saves them
// in the store and publishes each message as an "a2ui" event in order (to
// every process's subscribers). When another process saved the session's
// surfaces meanwhile, the push is validated again against its result
// (ErrConflict when that goes on for maxSaveWait). Validation
// covers each line (see ParseA2UI) and, against the surfaces as they would be
// after the push: every component id reference resolves, every
// beginRendering root exists, no component contains itself, and the surface
// and component limits hold. A bad push is a *ValidationError (422); a body
// over MaxA2UIBytes, or surfaces that would encode to more than
// MaxStateBytes, is ErrTooLarge (and nothing is applied).
func (h *Host) PushA2UI(ctx context.Context, session string, body []byte) (PushResult, error) {
	if err := ValidateSession(session); err != nil {
		return PushResult{}, err
	}
	if int64(len(body)) > h.cfg.MaxA2UIBytes {
		return PushResult{}, fmt.Errorf("A2UI push is %d bytes, over the limit of %d; split it into several pushes: %w",
			len(body), h.cfg.MaxA2UIBytes, canvas.ErrTooLarge)
	}
	msgs, err := ParseA2UI(body, h.cfg.MaxA2UILines)
	if err != nil {
		return PushResult{}, err
	}
	st := h.lockState(session)
	defer h.unlockState(st)
	for start := time.Now(); ; {
		if err := h.loadLocked(ctx, session, st); err != nil {
			return PushResult{}, err
		}
		next, order, err := h.planPush(st, msgs)
		if err != nil {
			return PushResult{}, err
		}
		err = h.saveLocked(ctx, session, st, next, order)
		if raced(session, start, &err) {
			continue // another process pushed meanwhile: validate against its result
		}
		if err != nil {
			return PushResult{}, err
		}
		return h.publishPush(session, st.version, msgs), nil
	}
}

// publishPush sends the applied messages to the session's browsers as
// "a2ui" events, in order, and reports the push.
func (h *Host) publishPush(session string, version int64, msgs []A2UIMessage) PushResult {
	evs := make([]Event, len(msgs))
	touched := map[string]bool{}
	res := PushResult{Applied: len(msgs)}
	for i, m := range msgs {
		evs[i] = Event{Name: EventA2UI, Data: m.Raw, Version: version}
		if !touched[m.SurfaceID] {
			touched[m.SurfaceID] = true
			res.Surfaces = append(res.Surfaces, m.SurfaceID)
		}
	}
	res.Browsers = h.publish(session, evs...)
	sort.Strings(res.Surfaces)
	return res
}

// planPush applies msgs to copies of st's surfaces and validates the
// result; it returns the surfaces (and their order) the push would leave,
// or a *ValidationError naming every bad line.
func (h *Host) planPush(st *sessionState, msgs []A2UIMessage) (map[string]*surface, []string, error) {
	d := newDraft(st)
	var errs lineErrs
	defs, roots := h.applyToDraft(d, msgs, &errs)
	h.checkDraft(d, msgs, defs, roots, &errs)
	if len(errs.list) > 0 {
		sort.SliceStable(errs.list, func(i, j int) bool { return errs.list[i].Line < errs.list[j].Line })
		return nil, nil, &ValidationError{Lines: errs.list}
	}
	return d.surfaces, d.order, nil
}

// draft is a session's surfaces as a push would leave them. A surface the
// push changes is copied on its first change, so the session's own surfaces
// stay as they are until the push is validated and saved.
type draft struct {
	surfaces map[string]*surface
	order    []string        // surface ids in creation order
	copied   map[string]bool // surfaces that are the draft's own
}

func newDraft(st *sessionState) *draft {
	d := &draft{surfaces: make(map[string]*surface, len(st.surfaces)), order: append([]string(nil), st.order...), copied: map[string]bool{}}
	for k, v := range st.surfaces {
		d.surfaces[k] = v
	}
	return d
}

// surface returns the draft's own copy of surface id, creating it empty.
func (d *draft) surface(id string) *surface {
	s := d.surfaces[id]
	if s == nil {
		s = &surface{ID: id, Components: map[string]json.RawMessage{}, Refs: map[string][]ComponentRef{}, Data: map[string]any{}}
		d.surfaces[id] = s
		d.order = append(d.order, id)
		d.copied[id] = true
		return s
	}
	if !d.copied[id] {
		s = cloneSurface(s)
		d.surfaces[id] = s
		d.copied[id] = true
	}
	return s
}

func (d *draft) deleteSurface(id string) {
	if _, ok := d.surfaces[id]; !ok {
		return
	}
	delete(d.surfaces, id)
	delete(d.copied, id)
	for i, sid := range d.order {
		if sid == id {
			d.order = append(d.order[:i:i], d.order[i+1:]...)
			return
		}
	}
}

// componentDef is where a push defined a component.
type componentDef struct {
	surface, id string
	line, index int // the message's line, the component's index in it
}

// applyToDraft applies msgs to d in order. It returns every component
// definition and beginRendering message, which checkDraft checks against the
// final draft, and adds a line error for each component over MaxComponents.
func (h *Host) applyToDraft(d *draft, msgs []A2UIMessage, errs *lineErrs) (defs []componentDef, roots []A2UIMessage) {
	for _, m := range msgs {
		switch m.Kind {
		case KindSurfaceUpdate:
			s := d.surface(m.SurfaceID)
			for _, c := range m.Components {
				if _, ok := s.Components[c.ID]; !ok {
					if len(s.Order) >= h.cfg.MaxComponents {
						errs.add(m.Line, fmt.Sprintf("surfaceUpdate.components[%d]", c.index), "surface %q would have more than %d components", m.SurfaceID, h.cfg.MaxComponents)
						continue
					}
					s.Order = append(s.Order, c.ID)
				}
				s.Components[c.ID] = c.Raw
				s.Refs[c.ID] = c.Refs
				defs = append(defs, componentDef{m.SurfaceID, c.ID, m.Line, c.index})
			}
		case KindDataModelUpdate:
			s := d.surface(m.SurfaceID)
			setPath(s.Data, m.Path, deepCopyMap(m.Contents), func(data map[string]any) { s.Data = data })
		case KindBeginRendering:
			s := d.surface(m.SurfaceID)
			s.Root, s.Styles, s.CatalogID, s.Rendering = m.Root, m.Styles, m.CatalogID, true
			roots = append(roots, m)
		case KindDeleteSurface:
			d.deleteSurface(m.SurfaceID)
		}
	}
	return defs, roots
}

// checkDraft adds a line error for what the surfaces after the push would
// break: the surface limit, for each component's last definition its
// references and cycles, and each beginRendering's root.
func (h *Host) checkDraft(d *draft, msgs []A2UIMessage, defs []componentDef, roots []A2UIMessage, errs *lineErrs) {
	if len(d.order) > h.cfg.MaxSurfaces {
		errs.add(msgs[len(msgs)-1].Line, "", "the session would have %d surfaces, over the limit of %d; delete some with deleteSurface", len(d.order), h.cfg.MaxSurfaces)
	}
	last := make(map[[2]string]int, len(defs)) // the last definition wins
	for i, def := range defs {
		last[[2]string{def.surface, def.id}] = i
	}
	for i, def := range defs {
		if last[[2]string{def.surface, def.id}] != i {
			continue
		}
		s := d.surfaces[def.surface]
		if s == nil || s.Components[def.id] == nil {
			continue // deleted later in the push
		}
		for _, r := range s.Refs[def.id] {
			if _, ok := s.Components[r.ID]; !ok {
				errs.add(def.line, fmt.Sprintf("surfaceUpdate.components[%d].%s", def.index, r.Field),
					"component %q is not defined on surface %q; define it in this push or an earlier one", r.ID, def.surface)
			}
		}
		if cyc := findCycle(s, def.id); cyc != "" {
			errs.add(def.line, fmt.Sprintf("surfaceUpdate.components[%d]", def.index), "component %q contains itself (%s)", def.id, cyc)
		}
	}
	for _, m := range roots {
		s := d.surfaces[m.SurfaceID]
		if s == nil {
			continue
		}
		if _, ok := s.Components[m.Root]; !ok {
			errs.add(m.Line, "beginRendering.root", "component %q is not defined on surface %q; send its surfaceUpdate first", m.Root, m.SurfaceID)
		}
	}
}

// findCycle reports a reference path from id back to itself, or "".
func findCycle(s *surface, start string) string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		path = append(path, id)
		for _, r := range s.Refs[id] {
			if r.ID == start {
				path = append(path, start)
				return true
			}
			if color[r.ID] == white {
				if _, ok := s.Components[r.ID]; ok && visit(r.ID) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[id] = black
		return false
	}
	if visit(start) {
		return strings.Join(path, " → ")
	}
	return ""
}

// setPath sets the value at tokens in the data model; empty tokens replace
// the whole model (through replaceRoot). Intermediate non-objects are
// replaced by objects.
func setPath(root map[string]any, toks []string, val map[string]any, replaceRoot func(map[string]any)) {
	if len(toks) == 0 {
		replaceRoot(val)
		return
	}
	cur := root
	for _, t := range toks[:len(toks)-1] {
		next, ok := cur[t].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[t] = next
		}
		cur = next
	}
	cur[toks[len(toks)-1]] = val
}

// ResetA2UI deletes every surface of the session (its state in the store)
// and publishes a deleteSurface message for each. It returns how many
// surfaces were deleted.
func (h *Host) ResetA2UI(ctx context.Context, session string) (int, error) {
	if err := ValidateSession(session); err != nil {
		return 0, err
	}
	st := h.lockState(session)
	defer h.unlockState(st)
	for start := time.Now(); ; {
		if err := h.loadLocked(ctx, session, st); err != nil {
			return 0, err
		}
		ids := st.order
		if len(ids) == 0 {
			// Nothing to delete: the state (and its version, which the
			// streams follow) stays as it is.
			return 0, nil
		}
		err := h.saveLocked(ctx, session, st, map[string]*surface{}, nil)
		if raced(session, start, &err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		evs := make([]Event, len(ids))
		for i, id := range ids {
			evs[i] = Event{Name: EventA2UI, Data: mustJSON(map[string]any{KindDeleteSurface: map[string]string{"surfaceId": id}}), Version: st.version}
		}
		h.publish(session, evs...)
		return len(ids), nil
	}
}

// A2UIMessages returns messages that rebuild the session's current surfaces
// on an empty renderer: per surface, one surfaceUpdate with every component,
// one dataModelUpdate replacing the data model (when it is not empty) and,
// when rendering had begun, beginRendering.
func (h *Host) A2UIMessages(ctx context.Context, session string) ([]json.RawMessage, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	st := h.lockState(session)
	defer h.unlockState(st)
	if err := h.loadLocked(ctx, session, st); err != nil {
		return nil, err
	}
	return snapshotLocked(st), nil
}

func snapshotLocked(st *sessionState) []json.RawMessage {
	var out []json.RawMessage
	for _, id := range st.order {
		s := st.surfaces[id]
		if len(s.Order) > 0 {
			comps := make([]json.RawMessage, 0, len(s.Order))
			for _, cid := range s.Order {
				comps = append(comps, s.Components[cid])
			}
			out = append(out, mustJSON(map[string]any{KindSurfaceUpdate: map[string]any{"surfaceId": id, "components": comps}}))
		}
		if len(s.Data) > 0 {
			out = append(out, mustJSON(map[string]any{KindDataModelUpdate: map[string]any{"surfaceId": id, "path": "/", "contents": toContents(s.Data)}}))
		}
		if s.Rendering {
			br := map[string]any{"surfaceId": id, "root": s.Root}
			if len(s.Styles) > 0 {
				br["styles"] = s.Styles
			}
			if s.CatalogID != "" {
				br["catalogId"] = s.CatalogID
			}
			out = append(out, mustJSON(map[string]any{KindBeginRendering: br}))
		}
	}
	return out
}

// toContents turns a data model object back into A2UI's adjacency-list
// entries, keys sorted for a stable encoding.
func toContents(m map[string]any) []map[string]any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]map[string]any, 0, len(m))
	for _, k := range keys {
		e := map[string]any{"key": k}
		switch v := m[k].(type) {
		case string:
			e["valueString"] = v
		case bool:
			e["valueBoolean"] = v
		case map[string]any:
			e["valueMap"] = toContents(v)
		default: // json.Number or float64
			e["valueNumber"] = v
		}
		out = append(out, e)
	}
	return out
}

// Snapshot returns the "a2ui" events that rebuild the session's current
// surfaces and the state version they hold. Register the browser for the
// session's live events first (hub.Hub.SubscribeHost), then send these,
// then the live events of later versions: an update committed in between
// is then both in the snapshot and received, and the stream drops the copy
// (canvas.HostEvent.Version), also when other processes push (their events
// may arrive before or after the state was read).
func (h *Host) Snapshot(ctx context.Context, session string) (version int64, evs []Event, err error) {
	if err := ValidateSession(session); err != nil {
		return 0, nil, err
	}
	st := h.lockState(session)
	defer h.unlockState(st)
	if err := h.loadLocked(ctx, session, st); err != nil {
		return 0, nil, err
	}
	for _, m := range snapshotLocked(st) {
		evs = append(evs, Event{Name: EventA2UI, Data: m})
	}
	return st.version, evs, nil
}
