package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/canvasd/canvasd/canvas"
)

// stateFile holds a session's surfaces inside its directory. Hidden names are
// never served nor written through the file API.
const stateFile = ".a2ui-state.json"

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

type sessionState struct {
	mu       sync.Mutex
	loaded   bool
	order    []string // surface ids in creation order
	surfaces map[string]*surface
}

type persisted struct {
	Version  int        `json:"version"`
	Surfaces []*surface `json:"surfaces"`
}

func (h *Host) state(session string) *sessionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.sessions[session]
	if st == nil {
		st = &sessionState{surfaces: map[string]*surface{}}
		h.sessions[session] = st
	}
	return st
}

// loadLocked reads the persisted surfaces once. A corrupt file is logged and
// ignored (the session starts empty) rather than making the session unusable.
func (h *Host) loadLocked(session string, st *sessionState) {
	if st.loaded {
		return
	}
	st.loaded = true
	b, err := h.root.ReadFile(session + "/" + stateFile)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("host: read a2ui state", "session", session, "err", err)
		}
		return
	}
	var p persisted
	if err := json.Unmarshal(b, &p); err != nil {
		h.log.Warn("host: corrupt a2ui state ignored", "session", session, "err", err)
		return
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
}

func (h *Host) persistLocked(session string, st *sessionState) error {
	if len(st.order) == 0 {
		err := h.root.Remove(session + "/" + stateFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("host: remove a2ui state: %w", err)
		}
		return nil
	}
	p := persisted{Version: 1}
	for _, id := range st.order {
		p.Surfaces = append(p.Surfaces, st.surfaces[id])
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("host: encode a2ui state: %w", err)
	}
	if int64(len(b)) > h.cfg.MaxStateBytes {
		return fmt.Errorf("the session's surfaces would take %d bytes, over the limit of %d; delete surfaces (deleteSurface) or send smaller data models: %w",
			len(b), h.cfg.MaxStateBytes, canvas.ErrTooLarge)
	}
	if err := h.root.Mkdir(session, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("host: create session %q: %w", session, err)
	}
	sroot, err := h.root.OpenRoot(session)
	if err != nil {
		return fmt.Errorf("host: open session %q: %w", session, err)
	}
	defer sroot.Close()
	if _, err := writeAtomic(sroot, stateFile, strings.NewReader(string(b)), int64(len(b))); err != nil {
		return err
	}
	return nil
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
// when every line is good, applies it to the session's surfaces, persists
// them and publishes each message as an "a2ui" event in order. Validation
// covers each line (see ParseA2UI) and, against the surfaces as they would be
// after the push: every component id reference resolves, every
// beginRendering root exists, no component contains itself, and the surface
// and component limits hold. A bad push is a *ValidationError (422); a body
// over MaxA2UIBytes, or surfaces that would encode to more than
// MaxStateBytes, is ErrTooLarge (and nothing is applied).
func (h *Host) PushA2UI(session string, body []byte) (PushResult, error) {
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
	st := h.state(session)
	st.mu.Lock()
	defer st.mu.Unlock()
	h.loadLocked(session, st)

	// Simulate on copies of the touched surfaces.
	next := make(map[string]*surface, len(st.surfaces))
	for k, v := range st.surfaces {
		next[k] = v
	}
	order := append([]string(nil), st.order...)
	copied := map[string]bool{}
	get := func(id string) *surface {
		s := next[id]
		if s == nil {
			s = &surface{ID: id, Components: map[string]json.RawMessage{}, Refs: map[string][]ComponentRef{}, Data: map[string]any{}}
			next[id] = s
			order = append(order, id)
			copied[id] = true
			return s
		}
		if !copied[id] {
			s = cloneSurface(s)
			next[id] = s
			copied[id] = true
		}
		return s
	}
	type def struct {
		surface, id string
		line, index int
	}
	var defs []def // components defined by this push, last definition wins
	lastDef := map[[2]string]int{}
	var roots []A2UIMessage
	var errs lineErrs
	touched := map[string]bool{}
	for _, m := range msgs {
		touched[m.SurfaceID] = true
		switch m.Kind {
		case KindSurfaceUpdate:
			s := get(m.SurfaceID)
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
				key := [2]string{m.SurfaceID, c.ID}
				lastDef[key] = len(defs)
				defs = append(defs, def{m.SurfaceID, c.ID, m.Line, c.index})
			}
		case KindDataModelUpdate:
			s := get(m.SurfaceID)
			setPath(s.Data, m.Path, deepCopyMap(m.Contents), func(d map[string]any) { s.Data = d })
		case KindBeginRendering:
			s := get(m.SurfaceID)
			s.Root, s.Styles, s.CatalogID, s.Rendering = m.Root, m.Styles, m.CatalogID, true
			roots = append(roots, m)
		case KindDeleteSurface:
			if _, ok := next[m.SurfaceID]; ok {
				delete(next, m.SurfaceID)
				delete(copied, m.SurfaceID)
				for i, id := range order {
					if id == m.SurfaceID {
						order = append(order[:i:i], order[i+1:]...)
						break
					}
				}
			}
		}
	}
	if len(order) > h.cfg.MaxSurfaces {
		errs.add(msgs[len(msgs)-1].Line, "", "the session would have %d surfaces, over the limit of %d; delete some with deleteSurface", len(order), h.cfg.MaxSurfaces)
	}
	for i, d := range defs {
		if lastDef[[2]string{d.surface, d.id}] != i {
			continue
		}
		s := next[d.surface]
		if s == nil || s.Components[d.id] == nil {
			continue // deleted later in the push
		}
		for _, r := range s.Refs[d.id] {
			if _, ok := s.Components[r.ID]; !ok {
				errs.add(d.line, fmt.Sprintf("surfaceUpdate.components[%d].%s", d.index, r.Field),
					"component %q is not defined on surface %q; define it in this push or an earlier one", r.ID, d.surface)
			}
		}
		if cyc := findCycle(s, d.id); cyc != "" {
			errs.add(d.line, fmt.Sprintf("surfaceUpdate.components[%d]", d.index), "component %q contains itself (%s)", d.id, cyc)
		}
	}
	for _, m := range roots {
		s := next[m.SurfaceID]
		if s == nil {
			continue
		}
		if _, ok := s.Components[m.Root]; !ok {
			errs.add(m.Line, "beginRendering.root", "component %q is not defined on surface %q; send its surfaceUpdate first", m.Root, m.SurfaceID)
		}
	}
	if len(errs.list) > 0 {
		sort.SliceStable(errs.list, func(i, j int) bool { return errs.list[i].Line < errs.list[j].Line })
		return PushResult{}, &ValidationError{Lines: errs.list}
	}

	prevSurfaces, prevOrder := st.surfaces, st.order
	st.surfaces, st.order = next, order
	if err := h.persistLocked(session, st); err != nil {
		st.surfaces, st.order = prevSurfaces, prevOrder
		return PushResult{}, err
	}
	res := PushResult{Applied: len(msgs)}
	for _, m := range msgs {
		res.Browsers = h.hub.Publish(session, Event{Name: EventA2UI, Data: m.Raw})
	}
	for id := range touched {
		res.Surfaces = append(res.Surfaces, id)
	}
	sort.Strings(res.Surfaces)
	return res, nil
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

// ResetA2UI deletes every surface of the session (and its persisted state)
// and publishes a deleteSurface message for each. It returns how many
// surfaces were deleted.
func (h *Host) ResetA2UI(session string) (int, error) {
	if err := ValidateSession(session); err != nil {
		return 0, err
	}
	st := h.state(session)
	st.mu.Lock()
	defer st.mu.Unlock()
	h.loadLocked(session, st)
	ids := st.order
	prevS, prevO := st.surfaces, st.order
	st.surfaces, st.order = map[string]*surface{}, nil
	if err := h.persistLocked(session, st); err != nil {
		st.surfaces, st.order = prevS, prevO
		return 0, err
	}
	for _, id := range ids {
		h.hub.Publish(session, Event{Name: EventA2UI, Data: mustJSON(map[string]any{KindDeleteSurface: map[string]string{"surfaceId": id}})})
	}
	return len(ids), nil
}

// A2UIMessages returns messages that rebuild the session's current surfaces
// on an empty renderer: per surface, one surfaceUpdate with every component,
// one dataModelUpdate replacing the data model (when it is not empty) and,
// when rendering had begun, beginRendering.
func (h *Host) A2UIMessages(session string) ([]json.RawMessage, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	st := h.state(session)
	st.mu.Lock()
	defer st.mu.Unlock()
	h.loadLocked(session, st)
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

// Subscribe registers a browser for the session's events and returns, taken
// atomically with the registration, the "a2ui" events that rebuild the
// current surfaces. Send those first, then the subscription's events: no
// push is missed or sent twice.
func (h *Host) Subscribe(session string) (*Subscription, []Event, error) {
	if err := ValidateSession(session); err != nil {
		return nil, nil, err
	}
	st := h.state(session)
	st.mu.Lock()
	defer st.mu.Unlock()
	h.loadLocked(session, st)
	var evs []Event
	for _, m := range snapshotLocked(st) {
		evs = append(evs, Event{Name: EventA2UI, Data: m})
	}
	return h.hub.Subscribe(session), evs, nil
}
