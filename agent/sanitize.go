package agent

import (
	"crypto/rand"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// Drop is an action the sanitizer refused, with the reason (logged, counted,
// and told to the model in a follow-up turn). A Partial drop is a part of
// an action that was not applied (a field or value of the tldraw kit's that
// could not be mapped) while the rest was.
type Drop struct {
	Action  Action
	Reason  string
	Partial bool
}

// SanitizeStats counts what the sanitizer did over its lifetime.
type SanitizeStats struct {
	Accepted   int `json:"accepted"`
	Dropped    int `json:"dropped"`
	Duplicates int `json:"duplicates"`
	Deferred   int `json:"deferred"`
	Renamed    int `json:"renamed"`
}

// Sanitizer turns complete model actions into valid catalog actions over a
// known set of shapes. It keeps, for one agent session:
//   - the shape ids known to exist (from the snapshot, plus its own creates,
//     minus its own deletes);
//   - a rename map from the ids the model chose to the `ag:{nanoid}` ids it
//     minted, so later references keep working across turns;
//   - the signatures of shapes it created, to drop duplicate creates;
//   - actions waiting for a create they depend on (released right after it,
//     so creates always come before the updates that need them).
//
// Every action Push returns passes Validate. Not safe for concurrent use.
type Sanitizer struct {
	exists   map[string]bool
	edges    map[string]bool   // the edge ids known to exist
	kitTodos map[string]string // the texts of the tldraw kit's todo numbers
	rename   map[string]string
	sigs     map[string]string
	deferred []pending
	newID    func() string
	origin   [2]float64
	Stats    SanitizeStats
}

type pending struct {
	a     Action
	needs map[string]bool
}

// maxDeferred bounds actions held back waiting for a create.
const maxDeferred = 64

// NewSanitizer returns a sanitizer over the given existing shape ids. newID
// mints shape ids (nil: NewShapeID).
func NewSanitizer(existing []string, newID func() string) *Sanitizer {
	if newID == nil {
		newID = NewShapeID
	}
	s := &Sanitizer{rename: map[string]string{}, sigs: map[string]string{}, newID: newID, edges: map[string]bool{}, kitTodos: map[string]string{}}
	s.Reset(existing)
	return s
}

// Reset replaces the known shape ids (after re-reading the canvas), keeping
// the rename map and duplicate signatures. Deferred actions are dropped.
func (s *Sanitizer) Reset(existing []string) {
	s.exists = make(map[string]bool, len(existing))
	for _, id := range existing {
		s.exists[id] = true
	}
	s.deferred = nil
}

// ResetEdges replaces the known edge ids (after re-reading the canvas).
func (s *Sanitizer) ResetEdges(existing []string) {
	s.edges = make(map[string]bool, len(existing))
	for _, id := range existing {
		s.edges[id] = true
	}
}

// isEdge reports whether id (after renaming) is a known edge.
func (s *Sanitizer) isEdge(id string) bool { return s.edges[s.resolve(id)] }

// known reports whether id (after renaming) is a known shape or edge.
func (s *Sanitizer) known(id string) bool {
	r := s.resolve(id)
	return s.exists[r] || s.edges[r]
}

// LearnEdge adds or (gone) removes an edge id (someone else's change).
func (s *Sanitizer) LearnEdge(id string, gone bool) {
	if gone {
		delete(s.edges, id)
	} else {
		s.edges[id] = true
	}
}

// SetOrigin sets where creates without a position go (the viewport centre).
func (s *Sanitizer) SetOrigin(x, y float64) { s.origin = [2]float64{x, y} }

// Exists reports whether id (after renaming) is a known shape.
func (s *Sanitizer) Exists(id string) bool { return s.exists[s.resolve(id)] }

// Forget removes an id from the known shapes (a concurrent delete).
func (s *Sanitizer) Forget(id string) { delete(s.exists, s.resolve(id)) }

// Learn adds a shape id (created by someone else).
func (s *Sanitizer) Learn(id string) { s.exists[id] = true }

// Renames returns a copy of the rename map.
func (s *Sanitizer) Renames() map[string]string {
	out := make(map[string]string, len(s.rename))
	for k, v := range s.rename {
		out[k] = v
	}
	return out
}

func (s *Sanitizer) resolve(id string) string {
	if r, ok := s.rename[id]; ok {
		return r
	}
	return id
}

// NewShapeID mints an agent shape id, "ag:" + a 21-character nanoid.
func NewShapeID() string { return "ag:" + nanoid(21) }

func nanoid(n int) string {
	const alphabet = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[b[i]&63]
	}
	return string(b)
}

// Push sanitizes one complete action. It returns the actions ready to apply,
// in order (usually the action itself; several for apply_preset; plus any
// deferred actions its create released), and the actions dropped.
func (s *Sanitizer) Push(a Action) (ready []Action, drops []Drop) {
	if isKit(a) {
		mapped, issues := s.fromKit(a)
		if len(mapped) == 0 {
			reason := strings.Join(issues, "; ")
			if reason == "" {
				reason = fmt.Sprintf("the tldraw kit's action %q could not be mapped", a.Name)
			}
			return nil, s.drop(a, reason)
		}
		for _, is := range issues {
			drops = append(drops, Drop{Action: a, Reason: is, Partial: true})
		}
		for _, m := range mapped {
			r, d := s.push(m)
			ready = append(ready, r...)
			drops = append(drops, d...)
		}
		return ready, drops
	}
	return s.push(a)
}

// push sanitizes one action in the catalog's vocabulary.
func (s *Sanitizer) push(a Action) (ready []Action, drops []Drop) {
	name := normVerb(a.Name)
	if name == "" {
		return nil, s.drop(a, fmt.Sprintf("unknown action %q", a.Name))
	}
	p := normParams(name, a.Params)
	a = Action{ID: a.ID, Name: name, Params: p}
	if name == "apply_preset" {
		exp, err := s.expandPreset(a)
		if err != "" {
			return nil, s.drop(a, err)
		}
		for _, e := range exp {
			r, d := s.push1(e)
			ready = append(ready, r...)
			drops = append(drops, d...)
		}
		return ready, drops
	}
	return s.push1(a)
}

func (s *Sanitizer) push1(a Action) (ready []Action, drops []Drop) {
	out, missing, reason := s.sanitize(a)
	if reason != "" {
		return nil, s.drop(a, reason)
	}
	if len(missing) > 0 {
		if len(s.deferred) >= maxDeferred {
			return nil, s.drop(a, "too many actions waiting for shapes that do not exist yet")
		}
		s.deferred = append(s.deferred, pending{a: a, needs: missing})
		s.Stats.Deferred++
		return nil, nil
	}
	if err := Validate(out); err != nil {
		return nil, s.drop(out, "invalid after sanitizing: "+err.Error())
	}
	s.commit(out)
	s.Stats.Accepted++
	ready = append(ready, out)
	// A create may release deferred actions that were waiting for it.
	if out.Name == "create_shape" || out.Name == "group" || out.Name == "connect" {
		r, d := s.release()
		ready = append(ready, r...)
		drops = append(drops, d...)
	}
	return ready, drops
}

// release re-pushes deferred actions whose needs are now all known.
func (s *Sanitizer) release() (ready []Action, drops []Drop) {
	for {
		idx := -1
		for i, p := range s.deferred {
			ok := true
			for id := range p.needs {
				if !s.known(id) {
					ok = false
					break
				}
			}
			if ok {
				idx = i
				break
			}
		}
		if idx < 0 {
			return ready, drops
		}
		p := s.deferred[idx]
		s.deferred = append(s.deferred[:idx:idx], s.deferred[idx+1:]...)
		s.Stats.Deferred--
		r, d := s.push1(p.a)
		ready = append(ready, r...)
		drops = append(drops, d...)
	}
}

// Flush ends a turn: deferred actions whose shapes never appeared are
// applied without the missing references when that still makes sense
// (e.g. a move of the ids that exist), otherwise dropped.
func (s *Sanitizer) Flush() (ready []Action, drops []Drop) {
	pend := s.deferred
	s.deferred = nil
	s.Stats.Deferred -= len(pend)
	for _, p := range pend {
		out, _, reason := s.sanitizeWith(p.a, true)
		if reason != "" {
			drops = append(drops, s.drop(p.a, reason)...)
			continue
		}
		if err := Validate(out); err != nil {
			drops = append(drops, s.drop(out, "invalid after sanitizing: "+err.Error())...)
			continue
		}
		s.commit(out)
		s.Stats.Accepted++
		ready = append(ready, out)
	}
	return ready, drops
}

func (s *Sanitizer) drop(a Action, reason string) []Drop {
	s.Stats.Dropped++
	if strings.HasPrefix(reason, "duplicate") {
		s.Stats.Duplicates++
	}
	return []Drop{{Action: a, Reason: reason}}
}

// commit records the effect of an accepted action on the known shapes.
func (s *Sanitizer) commit(a Action) {
	switch a.Name {
	case "create_shape":
		id := a.Params["id"].(string)
		s.exists[id] = true
		s.sigs[createSig(a.Params)] = id
	case "group":
		if id, ok := a.Params["group_id"].(string); ok {
			s.exists[id] = true
		}
	case "delete_shape":
		for _, x := range a.Params["ids"].([]any) {
			delete(s.exists, x.(string))
		}
	case "ungroup":
		delete(s.exists, a.Params["id"].(string))
	case "connect":
		s.edges[a.Params["id"].(string)] = true
	case "delete_edge":
		delete(s.edges, a.Params["id"].(string))
	}
}

func createSig(p map[string]any) string {
	text := ""
	if props, ok := p["props"].(map[string]any); ok {
		text, _ = props["text"].(string)
	}
	x, _ := p["x"].(float64)
	y, _ := p["y"].(float64)
	return fmt.Sprintf("%s|%.0f|%.0f|%s", p["type"], math.Round(x), math.Round(y), strings.TrimSpace(text))
}

// normParams copies params with camelCase keys in snake_case (except the
// design's apply_preset targetIds) and style keys given at the top level of
// a create/update moved into props.
func normParams(verb string, in map[string]any) map[string]any {
	p := make(map[string]any, len(in))
	for k, v := range in {
		nk := snake(k)
		if verb == "apply_preset" && (nk == "target_ids" || nk == "ids" || nk == "targets") {
			nk = "targetIds"
		}
		p[nk] = v
	}
	if verb == "create_shape" || verb == "update_shape" {
		props, _ := p["props"].(map[string]any)
		props = copyMap(props)
		for _, k := range []string{"color", "fill", "dash", "size", "font", "text", "geo", "align", "vertical_align"} {
			if v, ok := p[k]; ok {
				pk := k
				if k == "vertical_align" {
					pk = "verticalAlign"
				}
				if _, has := props[pk]; !has {
					props[pk] = v
				}
				delete(p, k)
			}
		}
		if len(props) > 0 {
			p["props"] = props
		}
		if verb == "create_shape" {
			if _, ok := p["type"]; !ok {
				for _, k := range []string{"kind", "shape", "shape_type"} {
					if v, ok := p[k]; ok {
						p["type"] = v
						break
					}
				}
			}
			if _, ok := p["w"]; !ok {
				if v, ok := p["width"]; ok {
					p["w"] = v
				}
			}
			if _, ok := p["h"]; !ok {
				if v, ok := p["height"]; ok {
					p["h"] = v
				}
			}
		}
	}
	// A single id where a list is expected, and vice versa.
	switch verb {
	case "delete_shape", "rotate", "group", "align", "distribute", "stack", "reorder":
		if _, ok := p["ids"]; !ok {
			if v, ok := p["id"]; ok {
				p["ids"] = v
				delete(p, "id")
			} else if v, ok := p["shape_ids"]; ok {
				p["ids"] = v
			}
		}
	case "ungroup":
		if _, ok := p["id"]; !ok {
			if v, ok := p["group_id"]; ok {
				p["id"] = v
			}
		}
	}
	if v, ok := p["ids"].(string); ok {
		p["ids"] = []any{v}
	}
	return p
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sanitize returns the sanitized action, or the ids it waits for, or why it
// must be dropped.
func (s *Sanitizer) sanitize(a Action) (Action, map[string]bool, string) {
	return s.sanitizeWith(a, false)
}

// sanitizeWith sanitizes a against the known shapes: final=true drops
// missing references instead of waiting for them (Flush).
func (s *Sanitizer) sanitizeWith(a Action, final bool) (Action, map[string]bool, string) {
	v, _ := verbByName(a.Name)
	refs := refResolver{s: s, final: final, missing: map[string]bool{}}
	out, reason := s.sanitizeFields(a, v, &refs)
	if reason != "" {
		return a, nil, reason
	}
	switch a.Name {
	case "create_shape":
		reason = s.sanitizeCreate(a, out, &refs)
	case "update_shape", "ungroup":
		if _, ok := out["id"]; ok {
			r, ok := refs.resolve(out["id"])
			if !ok {
				if len(refs.missing) > 0 {
					return a, refs.missing, ""
				}
				return a, nil, fmt.Sprintf("%s: shape %v does not exist", a.Name, a.Params["id"])
			}
			out["id"] = r
		}
	case "replace_lines", "insert_lines", "delete_lines", "search_replace":
		if r, ok := refs.resolve(out["node_id"]); ok {
			out["node_id"] = r
		} else if len(refs.missing) == 0 {
			reason = fmt.Sprintf("%s: document %v does not exist", a.Name, a.Params["node_id"])
		}
	case "connect", "update_edge":
		reason = s.sanitizeEdge(a, out, &refs)
	case "delete_edge":
		if r, ok := refs.resolveEdge(out["id"]); ok {
			out["id"] = r
		} else if len(refs.missing) == 0 {
			reason = fmt.Sprintf("%s: arrow %v does not exist", a.Name, a.Params["id"])
		}
	case "place":
		for _, k := range []string{"id", "reference_id"} {
			if _, ok := out[k]; !ok {
				continue
			}
			if r, ok := refs.resolve(out[k]); ok {
				out[k] = r
			} else if len(refs.missing) == 0 {
				reason = fmt.Sprintf("place: shape %v does not exist", a.Params[k])
			}
		}
	case "move", "resize":
		if id, ok := out["id"]; ok {
			if r, ok := refs.resolve(id); ok {
				out["id"] = r
			} else {
				delete(out, "id")
			}
		}
	case "group":
		if gid, ok := out["group_id"].(string); ok && s.exists[s.resolve(gid)] {
			reason = "duplicate create: group " + gid + " already exists"
		}
	case "apply_preset":
		reason = "apply_preset must be expanded first"
	}
	if reason != "" {
		return a, nil, reason
	}
	if len(refs.missing) > 0 {
		return a, refs.missing, ""
	}
	s.mintIDs(a.Name, out)
	if reason := checkSanitized(a.Name, v, out); reason != "" {
		return a, nil, reason
	}
	return Action{ID: a.ID, Name: a.Name, Params: out}, nil, ""
}

// sanitizeEdge completes a connect or an update_edge: its ends resolved to
// known shapes ("" keeps an end free), the arrow of an update known, and a
// new arrow's id fresh (the model's id is renamed to it, as for shapes).
func (s *Sanitizer) sanitizeEdge(a Action, out map[string]any, refs *refResolver) string {
	for _, end := range []string{"from", "to"} {
		v, present := a.Params[end]
		if !present || v == nil {
			delete(out, end)
			continue
		}
		id, _ := v.(string)
		if strings.TrimSpace(id) == "" {
			out[end] = ""
			continue
		}
		if r, ok := refs.resolve(id); ok {
			out[end] = r
		} else if !refs.final && mayBeCreatedLater(id) {
			// waits in refs.missing
		} else {
			return fmt.Sprintf("%s: %s shape %v does not exist", a.Name, end, id)
		}
	}
	if a.Name == "update_edge" {
		if r, ok := refs.resolveEdge(out["id"]); ok {
			out["id"] = r
		} else if len(refs.missing) == 0 {
			return fmt.Sprintf("update_edge: arrow %v does not exist", a.Params["id"])
		}
		if len(out) == 1 {
			return "update_edge: nothing valid to change"
		}
		return ""
	}
	if given, _ := out["id"].(string); given != "" && s.known(given) {
		return "duplicate create: arrow " + given + " already exists; update it instead"
	}
	return ""
}

// refResolver resolves the shape references of one action, collecting the
// ones that may still be created later in the reply (unless final).
type refResolver struct {
	s       *Sanitizer
	final   bool
	missing map[string]bool
}

// resolve returns the known shape id x refers to (after renaming).
func (rr *refResolver) resolve(x any) (string, bool) {
	id, ok := x.(string)
	id = strings.TrimSpace(id)
	if !ok || id == "" {
		return "", false
	}
	r := rr.s.resolve(id)
	if rr.s.exists[r] {
		return r, true
	}
	if !rr.final && mayBeCreatedLater(id) {
		rr.missing[id] = true
	}
	return "", false
}

// sanitizeFields copies the verb's known params, coerced by their tags:
// numbers clamped, enums normalized, strings trimmed and bounded, id lists
// resolved (unknown ids left out), props sanitized. A required field that
// cannot be coerced is a drop reason.
func (s *Sanitizer) sanitizeFields(a Action, v Verb, refs *refResolver) (map[string]any, string) {
	out := map[string]any{}
	for name, f := range jsonFields(v.Params) {
		val, present := a.Params[name]
		if !present || val == nil {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case name == "props":
			if pm, ok := val.(map[string]any); ok {
				if props := s.sanitizeProps(pm); len(props) > 0 {
					out["props"] = props
				}
			}
		case ft.Kind() == reflect.Float64:
			lo, hi := tagRange(f)
			if x, ok := toNumber(val, lo, hi); ok {
				out[name] = x
			} else if !isOptional(f) {
				return nil, fmt.Sprintf("%s: %s is not a number", a.Name, name)
			}
		case ft.Kind() == reflect.Int:
			lo, hi := tagRange(f)
			if x, ok := toNumber(val, lo, hi); ok && x == math.Trunc(x) {
				out[name] = x
			} else if !isOptional(f) {
				return nil, fmt.Sprintf("%s: %s is not a whole number", a.Name, name)
			}
		case ft.Kind() == reflect.Bool:
			if b, ok := val.(bool); ok {
				out[name] = b
			} else if str, ok := val.(string); ok && (str == "true" || str == "false") {
				out[name] = str == "true"
			}
		case ft.Kind() == reflect.String && f.Tag.Get("raw") != "":
			str, ok := val.(string)
			if !ok {
				return nil, fmt.Sprintf("%s: %s must be a string", a.Name, name)
			}
			if n := maxLen(f); n > 0 && len(str) > n {
				return nil, fmt.Sprintf("%s: %s is longer than %d bytes; make smaller edits", a.Name, name, n)
			}
			out[name] = strings.ToValidUTF8(str, "")
		case ft.Kind() == reflect.String:
			str, ok, reason := stringField(a.Name, name, f, val)
			if reason != "" {
				return nil, reason
			}
			if ok {
				out[name] = str
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			if ids := refs.resolveAll(val); len(ids) > 0 {
				out[name] = ids
			}
		case ft.Kind() == reflect.Interface: // any JSON (applet_invoke's payload), kept as sent
			out[name] = val
		}
	}
	return out, ""
}

// stringField coerces a string param: enums normalized (shape types are
// left to sanitizeCreate), other strings trimmed and bounded. ok is false
// when the value is left out; reason is set when a required enum is invalid.
func stringField(verb, name string, f reflect.StructField, val any) (str string, ok bool, reason string) {
	str, ok = val.(string)
	if !ok {
		if x, isNum := val.(float64); isNum && name != "id" {
			str, ok = fmt.Sprint(x), true
		}
	}
	if !ok {
		return "", false, ""
	}
	if e := f.Tag.Get("enum"); e != "" {
		if verb == "create_shape" && name == "type" { // sanitizeCreate reads the shape kind
			return "", false, ""
		}
		nv, ok := normEnum(e, str)
		if !ok {
			if !isOptional(f) {
				return "", false, fmt.Sprintf("%s: %s %q is not one of %s", verb, name, str, strings.Join(enumSet(e), ", "))
			}
			return "", false, ""
		}
		return nv, true, ""
	}
	str = strings.TrimSpace(str)
	if str == "" {
		return "", false, ""
	}
	if n := maxLen(f); n > 0 && len(str) > n {
		str = truncUTF8(str, n)
	}
	return str, true, ""
}

// resolveEdge returns the known edge id x refers to (after renaming).
func (rr *refResolver) resolveEdge(x any) (string, bool) {
	id, ok := x.(string)
	id = strings.TrimSpace(id)
	if !ok || id == "" {
		return "", false
	}
	r := rr.s.resolve(id)
	if rr.s.edges[r] {
		return r, true
	}
	if !rr.final && mayBeCreatedLater(id) {
		rr.missing[id] = true
	}
	return "", false
}

// resolveAll resolves a list of shape references, without duplicates, at
// most MaxIDs.
func (rr *refResolver) resolveAll(val any) []any {
	arr, ok := val.([]any)
	if !ok {
		return nil
	}
	var ids []any
	seen := map[string]bool{}
	for _, x := range arr {
		if len(ids) >= MaxIDs {
			break
		}
		if r, ok := rr.resolve(x); ok && !seen[r] {
			seen[r] = true
			ids = append(ids, r)
		}
	}
	return ids
}

// sanitizeCreate completes a create_shape: the TLDraw type (and geo) from
// the model's shape kind, a position at the origin when none is given, a
// default size, a known parent, and a fresh id (the model's id is renamed to
// it). It returns why the create must be dropped (a duplicate, an unknown
// type), or "" (refs.missing may then hold what it waits for).
func (s *Sanitizer) sanitizeCreate(a Action, out map[string]any, refs *refResolver) string {
	typ, geo, ok := shapeKind(fmt.Sprint(a.Params["type"]))
	if !ok {
		return fmt.Sprintf("create_shape: unknown shape type %v", a.Params["type"])
	}
	if typ == "arrow" {
		return "create_shape: an arrow is not a shape; connect two shapes with connect {from, to} (an end without a shape needs props.points)"
	}
	out["type"] = typ
	if geo != "" {
		props, _ := out["props"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		if _, has := props["geo"]; !has {
			props["geo"] = geo
		}
		out["props"] = props
	}
	if _, ok := out["x"]; !ok {
		out["x"] = clamp(s.origin[0], -MaxCoord, MaxCoord)
	}
	if _, ok := out["y"]; !ok {
		out["y"] = clamp(s.origin[1], -MaxCoord, MaxCoord)
	}
	defaultSize(out, typ)
	if pid, ok := out["parent_id"].(string); ok {
		if r := s.resolve(pid); s.exists[r] {
			out["parent_id"] = r
		} else if !refs.final && mayBeCreatedLater(pid) {
			refs.missing[pid] = true
		} else {
			delete(out, "parent_id")
		}
	}
	if dup, ok := s.sigs[createSig(out)]; ok && s.exists[dup] {
		return "duplicate create of " + dup
	}
	given, _ := out["id"].(string)
	if given != "" && s.exists[s.resolve(given)] {
		return "duplicate create: " + given + " already exists; update it instead"
	}
	if len(refs.missing) > 0 {
		return ""
	}
	id := s.newID()
	if given != "" {
		s.rename[given] = id
		s.Stats.Renamed++
	}
	out["id"] = id
	return ""
}

// mintIDs gives a group or an arrow its fresh id (the model's id is renamed to it).
func (s *Sanitizer) mintIDs(verb string, out map[string]any) {
	if verb == "connect" {
		eid := s.newID()
		if given, ok := out["id"].(string); ok {
			s.rename[given] = eid
			s.Stats.Renamed++
		}
		out["id"] = eid
		return
	}
	if verb != "group" {
		return
	}
	gid := s.newID()
	if g, ok := out["group_id"].(string); ok {
		s.rename[g] = gid
		s.Stats.Renamed++
	}
	out["group_id"] = gid
}

// checkSanitized says why a sanitized action is still unusable: verbs over
// ids without any existing id left, an update with nothing to change, a
// think or todo without text.
func checkSanitized(verb string, v Verb, out map[string]any) string {
	switch verb {
	case "delete_shape", "rotate", "group", "align", "distribute", "stack", "reorder":
		if _, ok := out["ids"]; !ok {
			return verb + ": none of its shapes exist"
		}
	case "update_shape", "ungroup":
		if _, ok := out["id"]; !ok {
			return verb + ": id is required"
		}
		if verb == "update_shape" && len(out) == 1 {
			return "update_shape: nothing valid to change"
		}
	}
	if v.Meta && (verb == "think" || verb == "todo") {
		if _, ok := out["text"]; !ok {
			return verb + ": text is required"
		}
	}
	return ""
}

// mayBeCreatedLater: a reference in canvas id form (shape:..., ag:...) names
// a shape that exists or never will; any other name may be the id a later
// create_shape of the same reply gives, so the action waits for it.
func mayBeCreatedLater(id string) bool {
	return !strings.HasPrefix(id, "shape:") && !strings.HasPrefix(id, "ag:") && !strings.HasPrefix(id, "edge:")
}

func defaultSize(p map[string]any, typ string) {
	w, h := 0.0, 0.0
	switch typ {
	case "geo":
		w, h = 240, 140
	case "note":
		w, h = 200, 200
	case "frame":
		w, h = 480, 320
	default:
		return
	}
	if _, ok := p["w"]; !ok {
		p["w"] = w
	}
	if _, ok := p["h"]; !ok {
		p["h"] = h
	}
}

func clamp(x, lo, hi float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return math.Max(lo, math.Min(hi, x))
}

func tagRange(f reflect.StructField) (float64, float64) {
	lo, hi := -MaxCoord, MaxCoord
	if v := f.Tag.Get("min"); v != "" {
		fmt.Sscan(v, &lo)
	}
	if v := f.Tag.Get("max"); v != "" {
		fmt.Sscan(v, &hi)
	}
	return lo, hi
}

func isOptional(f reflect.StructField) bool { _, opt := jsonName(f); return opt }

func maxLen(f reflect.StructField) int {
	n := 0
	if v := f.Tag.Get("maxlen"); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// sanitizeProps coerces the style props to TLDraw's enums (dropping blanks
// and values that cannot be coerced, such as a half-streamed color), text to
// a bounded string, segments to valid strokes, and other keys to finite JSON.
func (s *Sanitizer) sanitizeProps(in map[string]any) map[string]any {
	return sanitizeProps(in)
}

func sanitizeProps(in map[string]any) map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		if len(out) >= 50 {
			break
		}
		switch k {
		case "color", "fill", "dash", "size", "font", "geo":
			if nv, ok := normEnum(k, v); ok {
				out[k] = nv
			}
		case "align", "verticalAlign", "vertical_align":
			if nv, ok := normEnum("align", v); ok {
				if k == "vertical_align" {
					k = "verticalAlign"
				}
				out[k] = nv
			}
		case "text":
			switch t := v.(type) {
			case string:
				out[k] = truncUTF8(strings.ToValidUTF8(t, ""), MaxText)
			case float64:
				if !math.IsNaN(t) && !math.IsInf(t, 0) {
					out[k] = fmt.Sprint(t)
				}
			}
		case "segments":
			if segs := sanitizeSegments(v); len(segs) > 0 {
				out[k] = segs
			}
		default:
			if k == "" || len(k) > 64 {
				continue
			}
			if cv, ok := finiteJSON(v, 0); ok {
				out[k] = cv
			}
		}
	}
	return out
}

func sanitizeSegments(v any) []any {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	var out []any
	for _, x := range arr {
		if len(out) >= 200 {
			break
		}
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		typ := "free"
		if t, _ := m["type"].(string); t == "straight" {
			typ = t
		}
		pts, _ := m["points"].([]any)
		var ps []any
		for _, p := range pts {
			if len(ps) >= 5000 {
				break
			}
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			px, okx := toNumber(pm["x"], -MaxCoord, MaxCoord)
			py, oky := toNumber(pm["y"], -MaxCoord, MaxCoord)
			if !okx || !oky {
				continue
			}
			np := map[string]any{"x": px, "y": py}
			if z, ok := toNumber(pm["z"], 0, 1); ok {
				np["z"] = z
			}
			ps = append(ps, np)
		}
		if len(ps) > 0 {
			out = append(out, map[string]any{"type": typ, "points": ps})
		}
	}
	return out
}

// finiteJSON copies a JSON value, clamping non-finite numbers; too-deep values are dropped.
func finiteJSON(v any, depth int) (any, bool) {
	if depth > 8 {
		return nil, false
	}
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) {
			return 0.0, true
		}
		return clamp(t, -MaxCoord, MaxCoord), true
	case string:
		if len(t) > MaxText {
			t = truncUTF8(t, MaxText)
		}
		return strings.ToValidUTF8(t, ""), true
	case bool, nil:
		return t, true
	case []any:
		out := make([]any, 0, len(t))
		for _, x := range t {
			if len(out) >= 1000 {
				break
			}
			if c, ok := finiteJSON(x, depth+1); ok {
				out = append(out, c)
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if len(out) >= 100 {
				break
			}
			if c, ok := finiteJSON(x, depth+1); ok {
				out[k] = c
			}
		}
		return out, true
	}
	return nil, false
}

// presetStyle returns the brand tokens of a preset.
func presetStyle(p string) map[string]any {
	switch p {
	case "Hero":
		return map[string]any{"color": "orange", "size": "xl", "font": "sans", "align": "start"}
	case "Callout":
		return map[string]any{"color": "orange", "size": "m", "font": "sans"}
	case "Quiet":
		return map[string]any{"color": "grey", "size": "s", "font": "sans"}
	case "Wire":
		return map[string]any{"color": "black", "size": "s", "font": "mono", "dash": "dashed"}
	case "Label":
		return map[string]any{"color": "black", "size": "s", "font": "mono"}
	}
	return nil
}

// expandPreset turns apply_preset into update_shape per target or one create_shape (a note).
func (s *Sanitizer) expandPreset(a Action) ([]Action, string) {
	preset, ok := normEnum("preset", a.Params["preset"])
	if !ok {
		return nil, fmt.Sprintf("apply_preset: unknown preset %v (use %s)", a.Params["preset"], strings.Join(enumPreset, ", "))
	}
	style := presetStyle(preset)
	text, _ := a.Params["text"].(string)
	if targets, ok := a.Params["targetIds"].([]any); ok && len(targets) > 0 {
		var out []Action
		for i, t := range targets {
			props := copyMap(style)
			if text != "" {
				props["text"] = text
			}
			out = append(out, Action{ID: fmt.Sprintf("%s.%d", a.ID, i), Name: "update_shape", Params: map[string]any{"id": t, "props": props}})
		}
		return out, ""
	}
	props := copyMap(style)
	if text != "" {
		props["text"] = text
	}
	p := map[string]any{"type": "note", "props": props}
	if x, ok := a.Params["x"]; ok {
		p["x"] = x
	}
	if y, ok := a.Params["y"]; ok {
		p["y"] = y
	}
	return []Action{{ID: a.ID, Name: "create_shape", Params: p}}, ""
}

// SanitizePreview cleans a partial action for a preview envelope: the verb
// and (for creates) the shape type must already be complete and known, and
// style props that are not (yet) valid enum values are left out. ok is false
// when the action should not be previewed yet. It does not mint ids or
// change the sanitizer's state; references are shown renamed.
func (s *Sanitizer) SanitizePreview(a Action) (Action, bool) {
	if isKit(a) {
		if a.Name == "update-todo-list" { // mapping it records the todo's text
			return Action{}, false
		}
		mapped, _ := s.fromKit(a)
		if len(mapped) == 0 {
			return Action{}, false
		}
		a = Action{ID: a.ID, Name: mapped[0].Name, Params: mapped[0].Params}
	}
	name := normVerb(a.Name)
	if name == "" {
		return Action{}, false
	}
	p := normParams(name, a.Params)
	if name == "create_shape" {
		typ, _, ok := shapeKind(fmt.Sprint(p["type"]))
		if !ok || typ == "arrow" {
			return Action{}, false
		}
		p["type"] = typ
	}
	if props, ok := p["props"].(map[string]any); ok {
		p["props"] = sanitizeProps(props)
	}
	for k, v := range p {
		switch k {
		case "id", "parent_id":
			if id, ok := v.(string); ok {
				p[k] = s.resolve(id)
			}
		case "ids", "targetIds":
			if arr, ok := v.([]any); ok {
				cp := make([]any, 0, len(arr))
				for _, x := range arr {
					if id, ok := x.(string); ok {
						cp = append(cp, s.resolve(id))
					}
				}
				p[k] = cp
			}
		default:
			if cv, ok := finiteJSON(v, 0); ok {
				p[k] = cv
			} else {
				delete(p, k)
			}
		}
	}
	return Action{ID: a.ID, Name: name, Params: p}, true
}
