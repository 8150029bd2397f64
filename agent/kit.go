package agent

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The tldraw agent starter kit's replies: {"actions": [{"_type": "create",
// "intent": ..., "shape": {"_type": "rectangle", "shapeId": ..., ...}}, ...]}.
// fromKit maps one kit action to catalog actions, with the kit's meaning:
// its shapes (geo kinds, note, text with an anchor, line, arrow with
// fromId/toId), colours and fills, and its action names (create, update,
// delete, label, move, place, resize, rotate, align, distribute, stack,
// bringToFront, sendToBack, pen, think, message, setMyView,
// update-todo-list, review, add-detail; schedule, the earlier name of
// review). What it cannot map (an action or shape the catalog has no
// equivalent for, a value outside what canvasd keeps, a field it does not
// know) comes back as issues, which the runner tells the model in a
// follow-up turn.

// kitActions are the kit's action names fromKit maps.
var kitActions = map[string]bool{
	"create": true, "update": true, "delete": true, "label": true, "move": true, "place": true, "resize": true,
	"rotate": true, "align": true, "distribute": true, "stack": true, "bringToFront": true, "sendToBack": true,
	"pen": true, "think": true, "message": true, "setMyView": true, "update-todo-list": true, "review": true,
	"add-detail": true, "schedule": true,
}

// kitNotHere are kit actions canvasd has nothing for, and what to do instead.
var kitNotHere = map[string]string{
	"clear":                  "canvasd's agent never clears a shared canvas; delete shapes by id (delete_shape) instead",
	"count":                  "count the shapes in the canvas context instead",
	"countryInfo":            "canvasd's agent calls no external APIs",
	"getInspiration":         "canvasd's agent calls no external APIs",
	"randomWikipediaArticle": "canvasd's agent calls no external APIs",
	"unknown":                "use the catalog's actions",
}

// kitKeys are fields only the kit's actions have: an action carrying one of
// them is read as the kit's even without "_type".
var kitKeys = []string{"shape", "update", "shapeId", "shapeIds", "referenceShapeId", "intent", "scaleX", "originX"}

// isKit reports whether a parsed action is the kit's: named by "_type", or
// named as a kit action with the kit's fields, or named as a kit action
// the catalog does not know under any spelling.
func isKit(a Action) bool {
	if a.Kit {
		return true
	}
	if !kitActions[a.Name] && kitNotHere[a.Name] == "" {
		return false
	}
	if normVerb(a.Name) == "" {
		return true
	}
	for _, k := range kitKeys {
		if _, ok := a.Params[k]; ok {
			return true
		}
	}
	return false
}

// kitPalette: the kit's colours are tldraw's palette; asColor reads pink as light-violet.
var kitColorAlias = map[string]string{"pink": "light-violet", "light-pink": "light-violet"}

// kitFills maps the kit's fills to canvasd's (FocusedFill of the kit, tldraw 5.2.5).
var kitFills = map[string]string{"none": "none", "tint": "solid", "background": "semi", "solid": "lined-fill", "pattern": "pattern",
	// tldraw's own names, which models also send
	"semi": "semi", "fill": "fill", "lined-fill": "lined-fill"}

// kitGeos maps the kit's geo shape kinds to tldraw geometries.
var kitGeos = map[string]string{
	"rectangle": "rectangle", "ellipse": "ellipse", "triangle": "triangle", "diamond": "diamond", "hexagon": "hexagon",
	"pill": "oval", "oval": "oval", "cloud": "cloud", "x-box": "x-box", "check-box": "check-box", "heart": "heart",
	"pentagon": "pentagon", "octagon": "octagon", "star": "star", "rhombus": "rhombus", "rhombus-2": "rhombus-2",
	"parallelogram-right": "rhombus", "parallelogram-left": "rhombus-2", "trapezoid": "trapezoid",
	"fat-arrow-right": "arrow-right", "fat-arrow-left": "arrow-left", "fat-arrow-up": "arrow-up", "fat-arrow-down": "arrow-down",
	"arrow-right": "arrow-right", "arrow-left": "arrow-left", "arrow-up": "arrow-up", "arrow-down": "arrow-down",
}

// kitAnchors: where a text's (or a move's) x, y sit on the shape, as
// fractions of its width and height.
var kitAnchors = map[string][2]float64{
	"top-left": {0, 0}, "top-center": {0.5, 0}, "top-right": {1, 0},
	"center-left": {0, 0.5}, "center": {0.5, 0.5}, "center-right": {1, 0.5},
	"bottom-left": {0, 1}, "bottom-center": {0.5, 1}, "bottom-right": {1, 1},
}

// kitShapeFields are the fields of each kit shape kind (geo kinds under "geo").
var kitShapeFields = map[string][]string{
	"geo":   {"color", "fill", "h", "w", "width", "height", "text", "textAlign", "x", "y"},
	"note":  {"color", "text", "x", "y"},
	"text":  {"anchor", "color", "fontSize", "maxWidth", "text", "textAlign", "width", "wrap", "x", "y"},
	"line":  {"color", "x1", "y1", "x2", "y2"},
	"arrow": {"bend", "color", "fromId", "toId", "text", "x1", "y1", "x2", "y2"},
}

// kitMapper maps the kit's actions of one reply (or session); it reads and
// keeps the sanitizer's state (known shapes and edges, todo ids).
type kitMapper struct {
	s      *Sanitizer
	issues []string
}

func (m *kitMapper) issue(format string, args ...any) {
	m.issues = append(m.issues, fmt.Sprintf(format, args...))
}

// fromKit maps a kit action to catalog actions (raw params: the sanitizer
// coerces them next) and the issues of what it could not map. No actions
// and issues: the action is not applied at all.
func (s *Sanitizer) fromKit(a Action) ([]Action, []string) {
	m := &kitMapper{s: s}
	out := m.action(a.Name, a.Params)
	for i := range out {
		out[i].ID = a.ID
		if len(out) > 1 {
			out[i].ID = fmt.Sprintf("%s.%d", a.ID, i)
		}
	}
	return out, m.issues
}

// action maps one action of the agent kit (name, with its params) to the
// catalog actions that do it, noting what it cannot map in m's issues.
//
// It stays over 100 lines because it is one switch with a short case per
// kit verb, the whole mapping from the kit to the catalog in one table.
func (m *kitMapper) action(name string, p map[string]any) []Action {
	one := func(verb string, params map[string]any) []Action { return []Action{{Name: verb, Params: params}} }
	switch name {
	case "create":
		shape, ok := p["shape"].(map[string]any)
		if !ok {
			m.issue("create: no shape object")
			return nil
		}
		return m.create(shape)
	case "update":
		shape, ok := p["update"].(map[string]any)
		if !ok {
			m.issue("update: no update object")
			return nil
		}
		return m.update(shape)
	case "delete":
		var out []Action
		var nodes []any
		for _, id := range kitIDs(p, "shapeId", "shapeIds") {
			if m.s.isEdge(id) {
				out = append(out, Action{Name: "delete_edge", Params: map[string]any{"id": id}})
			} else {
				nodes = append(nodes, id)
			}
		}
		if len(nodes) > 0 {
			out = append(out, Action{Name: "delete_shape", Params: map[string]any{"ids": nodes}})
		}
		if len(out) == 0 {
			m.issue("delete: no shapeId")
		}
		return out
	case "label":
		id, _ := p["shapeId"].(string)
		text, ok := p["text"].(string)
		if !ok {
			m.issue("label %v: text is not a string", id)
			return nil
		}
		props := map[string]any{"text": text}
		if m.s.isEdge(id) {
			return one("update_edge", map[string]any{"id": id, "props": props})
		}
		return one("update_shape", map[string]any{"id": id, "props": props})
	case "move":
		out := map[string]any{"id": p["shapeId"], "x": p["x"], "y": p["y"]}
		anchor, _ := p["anchor"].(string)
		if anchor == "" || anchor == "top-left" {
			return one("move", out)
		}
		if _, ok := kitAnchors[anchor]; !ok {
			m.issue("move: anchor %q is not one of %s; moved by its top-left corner", anchor, kitAnchorNames())
			return one("move", out)
		}
		out["anchor"] = anchor
		return one("place", out)
	case "place":
		out := map[string]any{"id": p["shapeId"], "reference_id": p["referenceShapeId"], "side": p["side"]}
		copyKeys(out, p, map[string]string{"align": "align", "sideOffset": "side_offset", "alignOffset": "align_offset"})
		return one("place", out)
	case "resize":
		out := map[string]any{"ids": p["shapeIds"]}
		copyKeys(out, p, map[string]string{"scaleX": "scale_x", "scaleY": "scale_y", "originX": "origin_x", "originY": "origin_y"})
		return one("resize", out)
	case "rotate":
		out := map[string]any{"ids": p["shapeIds"], "degrees": p["degrees"]}
		copyKeys(out, p, map[string]string{"originX": "origin_x", "originY": "origin_y"})
		return one("rotate", out)
	case "align":
		return one("align", map[string]any{"ids": p["shapeIds"], "alignment": p["alignment"]})
	case "distribute":
		return one("distribute", map[string]any{"ids": p["shapeIds"], "direction": p["direction"]})
	case "stack":
		return one("stack", map[string]any{"ids": p["shapeIds"], "direction": p["direction"], "gap": p["gap"]})
	case "bringToFront":
		return one("reorder", map[string]any{"ids": p["shapeIds"], "op": "bring_to_front"})
	case "sendToBack":
		return one("reorder", map[string]any{"ids": p["shapeIds"], "op": "send_to_back"})
	case "pen":
		return m.pen(p)
	case "think", "message":
		return one("think", map[string]any{"text": p["text"]})
	case "setMyView":
		return one("set_viewport", map[string]any{"x": p["x"], "y": p["y"], "w": p["w"], "h": p["h"]})
	case "update-todo-list":
		return m.todo(p)
	case "review", "schedule":
		intent, _ := p["intent"].(string)
		hint := "Review your work"
		if intent != "" {
			hint += ": " + intent
		}
		if x, ok := toNumber(p["x"], -MaxCoord, MaxCoord); ok {
			y, _ := toNumber(p["y"], -MaxCoord, MaxCoord)
			w, _ := toNumber(p["w"], 0, MaxCoord)
			h, _ := toNumber(p["h"], 0, MaxCoord)
			hint += fmt.Sprintf(" (the area x %.0f, y %.0f, w %.0f, h %.0f)", x, y, w, h)
		}
		return one("add_detail", map[string]any{"hint": hint})
	case "add-detail":
		return one("add_detail", map[string]any{"hint": p["intent"]})
	}
	if why, ok := kitNotHere[name]; ok {
		m.issue("%s: the tldraw kit's %q action is not available here: %s", name, name, why)
		return nil
	}
	m.issue("%s: not an action of the tldraw kit or of the catalog", name)
	return nil
}

// create maps a kit shape to create_shape (or connect, for an arrow).
func (m *kitMapper) create(shape map[string]any) []Action {
	kind, _ := shape["_type"].(string)
	id := shape["shapeId"]
	switch kind {
	case "draw":
		m.issue("create: a draw shape is not created with create; draw it with a pen action (points)")
		return nil
	case "unknown", "":
		m.issue("create: shape kind %q cannot be created; use one of %s, note, text, line, arrow", kind, kitGeoNames())
		return nil
	case "arrow":
		return m.arrow("connect", shape, true)
	}
	typ, fields := kind, kitShapeFields[kind]
	if _, ok := kitGeos[kind]; ok {
		typ, fields = "geo", kitShapeFields["geo"]
	}
	if fields == nil {
		m.issue("create: shape kind %q is not one of %s, note, text, line, arrow", kind, kitGeoNames())
		return nil
	}
	m.unknownFields("create", kind, shape, fields)
	out := map[string]any{"id": id, "type": typ}
	props := m.props(kind, shape)
	switch typ {
	case "geo":
		props["geo"] = kitGeos[kind]
		copyKeys(out, shape, map[string]string{"x": "x", "y": "y", "w": "w", "h": "h", "width": "w", "height": "h"})
	case "note":
		copyKeys(out, shape, map[string]string{"x": "x", "y": "y"})
	case "text":
		m.textBox(out, props, shape)
	case "line":
		if !m.line(out, props, shape) {
			return nil
		}
	}
	if len(props) > 0 {
		out["props"] = props
	}
	return []Action{{Name: "create_shape", Params: out}}
}

// update maps a kit shape with changed fields to update_shape (or
// update_edge, for an arrow).
func (m *kitMapper) update(shape map[string]any) []Action {
	kind, _ := shape["_type"].(string)
	if kind == "arrow" {
		return m.arrow("update_edge", shape, false)
	}
	fields := kitShapeFields[kind]
	geo, isGeo := kitGeos[kind]
	if isGeo {
		fields = kitShapeFields["geo"]
	}
	if fields == nil {
		m.issue("update: shape kind %q is not one of %s, note, text, line, arrow", kind, kitGeoNames())
		return nil
	}
	m.unknownFields("update", kind, shape, fields)
	out := map[string]any{"id": shape["shapeId"]}
	props := m.props(kind, shape)
	switch {
	case isGeo:
		props["geo"] = geo
		copyKeys(out, shape, map[string]string{"x": "x", "y": "y", "w": "w", "h": "h", "width": "w", "height": "h"})
	case kind == "text":
		if _, ok := shape["x"]; ok {
			m.textBox(out, props, shape)
		} else {
			copyKeys(props, shape, map[string]string{"fontSize": "fontSize"})
		}
	case kind == "line":
		if _, ok := shape["x1"]; ok && !m.line(out, props, shape) {
			return nil
		}
	default:
		copyKeys(out, shape, map[string]string{"x": "x", "y": "y"})
	}
	if len(props) > 0 {
		out["props"] = props
	}
	return []Action{{Name: "update_shape", Params: out}}
}

// props maps the kit's style fields: colour, fill, text, text alignment
// and the shape's note (kept in props.meta.note, as the kit keeps it in meta).
func (m *kitMapper) props(kind string, shape map[string]any) map[string]any {
	props := map[string]any{}
	if c, ok := shape["color"]; ok {
		if v, ok := kitColor(c); ok {
			props["color"] = v
		} else {
			m.issue("%s %v: color %v is not one of %s; left as it was", kind, shape["shapeId"], c, strings.Join(enumColor, ", "))
		}
	}
	if f, ok := shape["fill"]; ok {
		if v, ok := kitFills[fmt.Sprint(f)]; ok {
			props["fill"] = v
		} else {
			m.issue("%s %v: fill %v is not one of none, tint, background, solid, pattern; left as it was", kind, shape["shapeId"], f)
		}
	}
	if t, ok := shape["text"]; ok && t != nil {
		props["text"] = t
	}
	if a, ok := shape["textAlign"]; ok {
		props["align"] = a
	}
	if note, ok := shape["note"].(string); ok && strings.TrimSpace(note) != "" {
		props["meta"] = map[string]any{"note": note}
	}
	return props
}

// textBox places a kit text shape: x, y are the point its anchor names,
// its width is maxWidth (wrapping) or estimated from the text (growing with
// it), and the anchor's horizontal part is its alignment.
func (m *kitMapper) textBox(out, props, shape map[string]any) {
	size := 20.0
	if fs, ok := toNumber(shape["fontSize"], 1, 1000); ok {
		size = fs
		props["fontSize"] = fs
	}
	text, _ := shape["text"].(string)
	w, h := kitTextSize(text, size)
	if mw, ok := toNumber(shape["maxWidth"], 1, MaxSize); ok {
		w = mw
		props["autoSize"] = false
	} else if mw, ok := toNumber(shape["width"], 1, MaxSize); ok {
		w = mw
	} else {
		props["autoSize"] = true
	}
	out["w"] = math.Max(w, MinSize)
	anchor, _ := shape["anchor"].(string)
	frac, ok := kitAnchors[anchor]
	if !ok {
		if anchor != "" {
			m.issue("text %v: anchor %q is not one of %s; placed by its top-left corner", shape["shapeId"], anchor, kitAnchorNames())
		}
		frac = [2]float64{0, 0}
	} else {
		props["align"] = [3]string{"start", "middle", "end"}[int(frac[0]*2)]
	}
	if x, ok := toNumber(shape["x"], -MaxCoord, MaxCoord); ok {
		out["x"] = x - frac[0]*w
	}
	if y, ok := toNumber(shape["y"], -MaxCoord, MaxCoord); ok {
		out["y"] = y - frac[1]*h
	}
}

// kitTextSize estimates the size of a text drawn at a font size (the
// metrics placement and the lints use).
func kitTextSize(text string, size float64) (w, h float64) {
	cols, lines := textExtent(text)
	return math.Max(float64(cols)*size*charWidth, size), float64(lines) * size * lineHeight
}

// line maps a kit line (x1, y1 to x2, y2 in page coordinates) to a line
// node at the corner of its box, its points relative to that corner.
func (m *kitMapper) line(out, props, shape map[string]any) bool {
	var c [4]float64
	for i, k := range []string{"x1", "y1", "x2", "y2"} {
		v, ok := toNumber(shape[k], -MaxCoord, MaxCoord)
		if !ok {
			m.issue("line %v: %s is not a number", shape["shapeId"], k)
			return false
		}
		c[i] = v
	}
	x0, y0 := math.Min(c[0], c[2]), math.Min(c[1], c[3])
	out["x"], out["y"] = x0, y0
	out["w"], out["h"] = math.Max(math.Abs(c[2]-c[0]), MinSize), math.Max(math.Abs(c[3]-c[1]), MinSize)
	props["points"] = []any{map[string]any{"x": c[0] - x0, "y": c[1] - y0}, map[string]any{"x": c[2] - x0, "y": c[3] - y0}}
	return true
}

// arrow maps a kit arrow to an edge: fromId and toId bind its ends (null or
// absent: a free end), x1..y2 are its ends in page coordinates, bend
// displaces its middle (positive: to the left of its direction) and makes
// it curved.
func (m *kitMapper) arrow(verb string, shape map[string]any, create bool) []Action {
	m.unknownFields(verbName(create), "arrow", shape, kitShapeFields["arrow"])
	out := map[string]any{"id": shape["shapeId"]}
	for kit, ours := range map[string]string{"fromId": "from", "toId": "to"} {
		v, present := shape[kit]
		switch id, _ := v.(string); {
		case id != "":
			out[ours] = id
		case present || create:
			out[ours] = "" // a free end
		}
	}
	props := m.props("arrow", shape)
	var c [4]float64
	ends := true
	for i, k := range []string{"x1", "y1", "x2", "y2"} {
		v, ok := toNumber(shape[k], -MaxCoord, MaxCoord)
		c[i], ends = v, ends && ok
	}
	bend, _ := toNumber(shape["bend"], -MaxCoord, MaxCoord)
	free := out["from"] == "" || out["to"] == ""
	switch {
	case ends && bend != 0:
		dx, dy := c[2]-c[0], c[3]-c[1]
		l := math.Hypot(dx, dy)
		mx, my := (c[0]+c[2])/2, (c[1]+c[3])/2
		if l > 0 {
			mx, my = mx+bend*dy/l, my-bend*dx/l
		}
		props["routing"] = "curved"
		props["points"] = []any{map[string]any{"x": c[0], "y": c[1]}, map[string]any{"x": mx, "y": my}, map[string]any{"x": c[2], "y": c[3]}}
	case ends && (free || !create):
		props["points"] = []any{map[string]any{"x": c[0], "y": c[1]}, map[string]any{"x": c[2], "y": c[3]}}
	case !ends && free && create:
		m.issue("arrow %v: an arrow with a free end needs x1, y1, x2 and y2", shape["shapeId"])
		return nil
	}
	if len(props) > 0 {
		out["props"] = props
	}
	return []Action{{Name: verb, Params: out}}
}

func verbName(create bool) string {
	if create {
		return "create"
	}
	return "update"
}

// pen maps the kit's pen stroke (points in page coordinates) to a draw
// shape at the corner of the stroke's box.
func (m *kitMapper) pen(p map[string]any) []Action {
	raw, _ := p["points"].([]any)
	var pts [][2]float64
	for _, x := range raw {
		pm, _ := x.(map[string]any)
		px, okx := toNumber(pm["x"], -MaxCoord, MaxCoord)
		py, oky := toNumber(pm["y"], -MaxCoord, MaxCoord)
		if okx && oky {
			pts = append(pts, [2]float64{px, py})
		}
	}
	if len(pts) < 2 {
		m.issue("pen %v: needs at least two points {x, y}", p["shapeId"])
		return nil
	}
	x0, y0, x1, y1 := pts[0][0], pts[0][1], pts[0][0], pts[0][1]
	for _, q := range pts {
		x0, y0, x1, y1 = math.Min(x0, q[0]), math.Min(y0, q[1]), math.Max(x1, q[0]), math.Max(y1, q[1])
	}
	rel := make([]any, len(pts))
	for i, q := range pts {
		rel[i] = map[string]any{"x": q[0] - x0, "y": q[1] - y0}
	}
	segType := "free"
	if p["style"] == "straight" {
		segType = "straight"
	}
	style := map[string]any{"shapeId": p["shapeId"]}
	copyKeys(style, p, map[string]string{"color": "color", "fill": "fill"})
	props := m.props("pen", style)
	props["segments"] = []any{map[string]any{"type": segType, "points": rel}}
	if closed, _ := p["closed"].(bool); closed {
		props["closed"] = true
	}
	return []Action{{Name: "create_shape", Params: map[string]any{"id": p["shapeId"], "type": "draw", "x": x0, "y": y0,
		"w": math.Max(x1-x0, MinSize), "h": math.Max(y1-y0, MinSize), "props": props}}}
}

// todo maps the kit's todo items, known by number, to the session's todos,
// known by text: the text of a number is remembered for later updates.
func (m *kitMapper) todo(p map[string]any) []Action {
	key := fmt.Sprint(p["id"])
	text, _ := p["text"].(string)
	if text = strings.TrimSpace(text); text != "" {
		if old, ok := m.s.kitTodos[key]; ok && old != text {
			// The session's todos are known by text: the new text is a new
			// item, and the old one is done with.
			m.s.kitTodos[key] = text
			return []Action{{Name: "todo", Params: map[string]any{"text": old, "status": "skipped"}},
				{Name: "todo", Params: map[string]any{"text": text, "status": kitTodoStatus(p["status"])}}}
		}
		m.s.kitTodos[key] = text
	} else if text = m.s.kitTodos[key]; text == "" {
		m.issue("update-todo-list: todo %s has no text (give text when you create a todo)", key)
		return nil
	}
	return []Action{{Name: "todo", Params: map[string]any{"text": text, "status": kitTodoStatus(p["status"])}}}
}

// kitTodoStatus: the kit's todo, in-progress and done are open, open and done.
func kitTodoStatus(v any) string {
	if v == "done" {
		return "done"
	}
	return "open"
}

// unknownFields reports the fields of a kit shape that fromKit does not read.
func (m *kitMapper) unknownFields(verb, kind string, shape map[string]any, known []string) {
	var extra []string
	for k := range shape {
		switch k {
		case "_type", "shapeId", "note":
			continue
		}
		found := false
		for _, f := range known {
			found = found || f == k
		}
		if !found {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		m.issue("%s %s %v: ignored %s (a %s shape has %s)", verb, kind, shape["shapeId"], strings.Join(extra, ", "), kind, strings.Join(known, ", "))
	}
}

func kitColor(v any) (string, bool) {
	s, _ := v.(string)
	if a, ok := kitColorAlias[s]; ok {
		return a, true
	}
	return s, inEnum(enumColor, s)
}

// kitIDs collects the ids of a one-id field and a list field.
func kitIDs(p map[string]any, one, many string) []string {
	var ids []string
	if id, ok := p[one].(string); ok && id != "" {
		ids = append(ids, id)
	}
	if list, ok := p[many].([]any); ok {
		for _, x := range list {
			if id, ok := x.(string); ok && id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// copyKeys copies the present fields of from named in names (kit → ours).
func copyKeys(to, from map[string]any, names map[string]string) {
	for kit, ours := range names {
		if v, ok := from[kit]; ok && v != nil {
			if _, taken := to[ours]; !taken {
				to[ours] = v
			}
		}
	}
}

func kitGeoNames() string {
	names := make([]string, 0, len(kitGeos))
	for k := range kitGeos {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func kitAnchorNames() string {
	names := make([]string, 0, len(kitAnchors))
	for k := range kitAnchors {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
