// Package agent is the canvas agent runner: it
// builds prompt context from a canvas snapshot, streams a model's reply,
// parses TLDraw-native actions incrementally, sanitizes them, publishes
// agent:* envelopes on the canvas stream, and applies every complete action
// as a command through package client (so it can run in-process or as the
// standalone `canvasd agent` worker).
//
// The action catalog in this file is the single source of truth: the Go
// param types validate actions, and the JSON Schemas given to the model and
// served at GET /api/canvas-agent/catalog are generated from the same types.
package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// ActionsVersion is the v of every agent:action envelope.
const ActionsVersion = "tldraw-actions/1"

// Action is one model action: a verb name and its params. ID is stable across
// the partial previews of one logical action within a session.
type Action struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
	// Kit: the model wrote it in the tldraw agent starter kit's form (kit.go).
	Kit bool `json:"-"`
}

// TLDraw enums the sanitizer coerces to and the validator accepts: the
// props schema of the canvas model (package canvas) and the agent's own.
var (
	enumColor     = canvas.PaletteNames()
	enumFill      = canvas.FillStyles
	enumDash      = canvas.DashStyles
	enumSize      = canvas.Sizes
	enumFont      = canvas.Fonts
	enumAlignH    = canvas.Aligns
	enumGeo       = canvas.GeoShapes
	enumArrowhead = canvas.Arrowheads
	enumRouting   = canvas.EdgeRoutings
	enumSide      = canvas.Sides
	enumPlaceAlgn = []string{"start", "center", "end"}
	enumAnchor    = []string{"top-left", "top-center", "top-right", "center-left", "center", "center-right", "bottom-left", "bottom-center", "bottom-right"}
	enumPreset    = []string{"Hero", "Callout", "Quiet", "Wire", "Label"}
	enumTodo      = []string{"open", "done", "skipped"}
)

// enumSet returns the values of an enum tag: the agent's sets (color, fill,
// ...), or the canvas package's (node_type, alignment, ...: the verbs' args).
func enumSet(name string) []string {
	switch name {
	case "color":
		return enumColor
	case "fill":
		return enumFill
	case "dash":
		return enumDash
	case "size":
		return enumSize
	case "font":
		return enumFont
	case "align":
		return enumAlignH
	case "geo":
		return enumGeo
	case "arrowhead":
		return enumArrowhead
	case "routing":
		return enumRouting
	case "preset":
		return enumPreset
	case "todo_status":
		return enumTodo
	case "side":
		return enumSide
	case "place_align":
		return enumPlaceAlgn
	case "anchor":
		return enumAnchor
	case "segment_type":
		return canvas.SegmentTypes
	}
	if v, ok := canvas.EnumValues(name); ok {
		return v
	}
	panic("agent: unknown enum set " + name)
}

// agentEnums resolves the agent's enum names for the schema generator.
func agentEnums(name string) []string { return enumSet(name) }

func inEnum(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

// Coordinate and size bounds (canvas units). The sanitizer clamps into them;
// the validator rejects values outside them.
const (
	MaxCoord = 1e6
	MinSize  = 1.0
	MaxSize  = 1e5
	MaxText  = 10000
	MaxIDs   = 500
)

// Param types. Struct tags drive both validation and the JSON Schema:
// json (name; omitempty = optional), desc, enum (a named set), min/max
// (numbers), maxlen (strings, arrays).

// ShapeProps are the TLDraw style props an action may set on a shape (the
// catalog's compact form of the model's NodeProps: each kind takes some of
// them, and the other keys docs/model.md lists for it).
type ShapeProps struct {
	Color         *string   `json:"color,omitempty" enum:"color" desc:"TLDraw color, or a hex colour #rrggbb"`
	Fill          *string   `json:"fill,omitempty" enum:"fill" desc:"fill style of geo shapes"`
	Dash          *string   `json:"dash,omitempty" enum:"dash" desc:"stroke style"`
	Size          *string   `json:"size,omitempty" enum:"size" desc:"stroke/text size"`
	Font          *string   `json:"font,omitempty" enum:"font" desc:"text font"`
	Text          *string   `json:"text,omitempty" maxlen:"10000" desc:"text content (geo, note, text shapes)"`
	Geo           *string   `json:"geo,omitempty" enum:"geo" desc:"geometry of a geo shape"`
	Align         *string   `json:"align,omitempty" enum:"align" desc:"horizontal text alignment"`
	VerticalAlign *string   `json:"verticalAlign,omitempty" enum:"align" desc:"vertical text alignment"`
	Segments      []Segment `json:"segments,omitempty" maxlen:"200" desc:"pen strokes of a draw shape, relative to its corner"`
}

// EdgeStyle are the props an arrow (connect, update_edge) may set: the
// catalog's compact form of the model's EdgeProps.
type EdgeStyle struct {
	Color          *string     `json:"color,omitempty" enum:"color" desc:"TLDraw color, or a hex colour #rrggbb"`
	Dash           *string     `json:"dash,omitempty" enum:"dash"`
	Size           *string     `json:"size,omitempty" enum:"size"`
	Text           *string     `json:"text,omitempty" maxlen:"10000" desc:"a label on the arrow"`
	ArrowheadStart *string     `json:"arrowheadStart,omitempty" enum:"arrowhead" desc:"default none"`
	ArrowheadEnd   *string     `json:"arrowheadEnd,omitempty" enum:"arrowhead" desc:"default arrow"`
	Routing        *string     `json:"routing,omitempty" enum:"routing" desc:"how the path runs between its points (default straight)"`
	Points         []DrawPoint `json:"points,omitempty" maxlen:"10000" desc:"the path in page coordinates, from end first; needed for a free end"`
	FromSide       *string     `json:"fromSide,omitempty" enum:"side" desc:"the from end sits at the middle of this side of its shape"`
	ToSide         *string     `json:"toSide,omitempty" enum:"side" desc:"the to end sits at the middle of this side of its shape"`
}

// Segment is one pen stroke of a draw shape.
type Segment struct {
	Type   string      `json:"type" enum:"segment_type" desc:"free or straight"`
	Points []DrawPoint `json:"points" maxlen:"5000"`
}

// DrawPoint is one point of a stroke; z is pen pressure.
type DrawPoint struct {
	X float64  `json:"x" min:"-1e6" max:"1e6"`
	Y float64  `json:"y" min:"-1e6" max:"1e6"`
	Z *float64 `json:"z,omitempty" min:"0" max:"1"`
}

// SetViewportParams pans/zooms the host browser's camera (ephemeral, never stored).
type SetViewportParams struct {
	X float64 `json:"x" min:"-1e6" max:"1e6"`
	Y float64 `json:"y" min:"-1e6" max:"1e6"`
	W float64 `json:"w" min:"1" max:"1e6"`
	H float64 `json:"h" min:"1" max:"1e6"`
}

// ThinkParams is a note to the people watching (sent as agent:chat).
type ThinkParams struct {
	Text string `json:"text" maxlen:"10000"`
}

// TodoParams stores a todo for this session.
type TodoParams struct {
	Text   string  `json:"text" maxlen:"2000"`
	Status *string `json:"status,omitempty" enum:"todo_status"`
}

// PlaceParams puts a shape beside another one (reference_id, side, align,
// offsets), or puts the point of a shape that anchor names at x, y. The
// runner reads where the shapes are when it applies it, and moves the shape.
type PlaceParams struct {
	ID          string   `json:"id" maxlen:"200" desc:"the shape to move"`
	ReferenceID *string  `json:"reference_id,omitempty" maxlen:"200" desc:"with side: the shape to put it beside"`
	Side        *string  `json:"side,omitempty" enum:"side" desc:"which side of the reference shape"`
	Align       *string  `json:"align,omitempty" enum:"place_align" desc:"along that side: start, center (default) or end"`
	SideOffset  *float64 `json:"side_offset,omitempty" min:"-1e4" max:"1e4" desc:"the gap between the two shapes"`
	AlignOffset *float64 `json:"align_offset,omitempty" min:"-1e4" max:"1e4" desc:"a shift along the side"`
	X           *float64 `json:"x,omitempty" min:"-1e6" max:"1e6" desc:"with y and anchor: where the anchor point goes"`
	Y           *float64 `json:"y,omitempty" min:"-1e6" max:"1e6"`
	Anchor      *string  `json:"anchor,omitempty" enum:"anchor" desc:"which point of the shape goes to x, y (default top-left)"`
}

// AddDetailParams asks for a follow-up pass that adds detail.
type AddDetailParams struct {
	Hint *string `json:"hint,omitempty" maxlen:"2000" desc:"what the follow-up pass should add"`
}

// SaveSnapshotParams saves the canvas's current revision as a named snapshot.
type SaveSnapshotParams struct {
	Label       *string `json:"label,omitempty" maxlen:"200"`
	Description *string `json:"description,omitempty" maxlen:"2000"`
}

// ApplyPresetParams applies a brand preset: to targetIds (updates) or as a new note.
type ApplyPresetParams struct {
	Preset    string   `json:"preset" enum:"preset"`
	TargetIDs []string `json:"targetIds,omitempty" maxlen:"500"`
	X         *float64 `json:"x,omitempty" min:"-1e6" max:"1e6"`
	Y         *float64 `json:"y,omitempty" min:"-1e6" max:"1e6"`
	Text      *string  `json:"text,omitempty" maxlen:"10000"`
}

// Verb is one catalog entry.
type Verb struct {
	Name        string
	Description string
	Params      reflect.Type
	Sample      string // a sample params object (JSON)
	// Command is the command type the action is sent as, whose args are
	// its params ("": not a command); def is that command's definition.
	Command string
	def     canvas.VerbDef
	// Meta verbs never become commands (think, todo, add_detail, set_viewport,
	// save_snapshot); Macro verbs are expanded by the sanitizer (apply_preset)
	// or by the runner when it applies them (place).
	Meta, Macro bool
	// Doc verbs edit a document; they are offered to the model only when the
	// target of the session is a document (DocumentSystemPrompt).
	Doc   bool
	check func(v any) error
}

// commandVerbs are the catalog's actions that are commands: the action's
// name, the command type, and what the model is told beyond the command's
// summary. Their params are the command's args, as package canvas defines
// them (canvas.Verbs): one definition for the reducer, openapi.yaml, MCP
// and this catalog.
var commandVerbs = []struct {
	name, command, note, sample string
	doc                         bool
	check                       func(v any) error
}{
	{"create_shape", "create_shape", "Use type draw with props.segments for pen strokes. Give it an id of your own to refer to it later.",
		`{"id":"headline","type":"text","x":100,"y":80,"w":640,"props":{"text":"BRUTAL","size":"xl","font":"sans","color":"black"}}`, false, nil},
	{"update_shape", "update_shape", "", `{"id":"headline","props":{"color":"orange"}}`, false, nil},
	{"delete_shape", "delete_shape", "", `{"ids":["shape:abc"]}`, false, nil},
	{"move", "move", "", `{"ids":["a","b"],"dx":40,"dy":0}`, false, nil},
	{"resize", "resize", "", `{"id":"a","w":300,"h":200}`, false, nil},
	{"rotate", "rotate", "", `{"ids":["a"],"degrees":15}`, false, nil},
	{"group", "group", "", `{"ids":["a","b"]}`, false, minIDs(2)},
	{"ungroup", "ungroup", "", `{"id":"g"}`, false, nil},
	{"align", "align", "", `{"ids":["a","b"],"alignment":"left"}`, false, minIDs(2)},
	{"distribute", "distribute", "", `{"ids":["a","b","c"],"direction":"horizontal"}`, false, minIDs(3)},
	{"stack", "stack", "", `{"ids":["a","b"],"direction":"vertical","gap":24}`, false, minIDs(2)},
	{"reorder", "reorder", "", `{"ids":["a"],"op":"bring_to_front"}`, false, nil},
	{"connect", "create_edge", "Its ends stay on the shapes they name (from, to) when the shapes move; an end without a shape is free and needs props.points.",
		`{"id":"a-to-b","from":"a","to":"b","props":{"text":"then","arrowheadEnd":"arrow"}}`, false, nil},
	{"update_edge", "update_edge", "", `{"id":"a-to-b","props":{"color":"red"}}`, false, nil},
	{"delete_edge", "delete_edge", "", `{"id":"a-to-b"}`, false, nil},
	{"replace_lines", "replace_lines", "Indent new_content as the code around it.",
		`{"node_id":"doc1","start_line":15,"end_line":16,"new_content":"  try {\n    await fetch(url)\n  } catch (err) {\n    console.error(err)\n  }\n","reason":"handle network errors"}`, true, checkLineRange},
	{"insert_lines", "insert_lines", "", `{"node_id":"doc1","insert_after_line":3,"content":"import os\n"}`, true, nil},
	{"delete_lines", "delete_lines", "", `{"node_id":"doc1","start_line":8,"end_line":9}`, true, checkLineRange},
	{"search_replace", "search_replace", "", `{"node_id":"doc1","search_pattern":"colour","replace_with":"color"}`, true, nil},
	{"undo", "undo", "Your own last change.", `{}`, true, nil},
}

// Verbs returns the catalog in prompt order. The list is built per call (no
// shared mutable state); callers may keep it.
func Verbs() []Verb {
	t := func(v any) reflect.Type { return reflect.TypeOf(v) }
	var out []Verb
	for _, c := range commandVerbs {
		def, ok := canvas.VerbByType(c.command)
		if !ok {
			panic("agent: no command " + c.command)
		}
		desc := def.Summary
		if c.note != "" {
			desc += " " + c.note
		}
		out = append(out, Verb{Name: c.name, Command: c.command, def: def, Description: desc, Params: def.Args, Sample: c.sample, Doc: c.doc, check: c.check})
		if c.name == "delete_edge" { // the agent's own actions follow the canvas verbs
			out = append(out,
				Verb{Name: "place", Description: "Put a shape beside another one (reference_id, side, align, side_offset, align_offset), or put the point of it that anchor names at x, y.", Params: t(PlaceParams{}),
					Sample: `{"id":"b","reference_id":"a","side":"right","align":"center","side_offset":40}`, check: checkPlace, Macro: true},
				Verb{Name: "set_viewport", Description: "Pan/zoom the viewers' camera to a box (not stored).", Params: t(SetViewportParams{}), Sample: `{"x":0,"y":0,"w":1600,"h":900}`, Meta: true},
				Verb{Name: "think", Description: "Tell the people watching what you are doing (shown in chat).", Params: t(ThinkParams{}), Sample: `{"text":"Laying out a bold hero first."}`, Meta: true},
				Verb{Name: "todo", Description: "Record a todo for this session.", Params: t(TodoParams{}), Sample: `{"text":"Add a footer"}`, Meta: true},
				Verb{Name: "add_detail", Description: "Ask for one more pass that adds detail after this reply.", Params: t(AddDetailParams{}), Sample: `{"hint":"add captions under the sticky notes"}`, Meta: true})
		}
		if c.name == "search_replace" {
			out = append(out, Verb{Name: "save_snapshot", Description: "Save the current version as a named snapshot before a risky change.", Params: t(SaveSnapshotParams{}), Doc: true, Meta: true,
				Sample: `{"label":"before refactor"}`})
		}
	}
	out = append(out, Verb{Name: "apply_preset", Description: "Brand macro: style targetIds with a preset (Hero, Callout, Quiet, Wire, Label), or create a new note with it at x, y.", Params: t(ApplyPresetParams{}), Sample: `{"preset":"Callout","x":100,"y":400,"text":"Raw concrete"}`, Macro: true})
	return append(out, hostVerbs()...) // the canvas host's actions (host_actions.go)
}

// verbByName finds a catalog entry.
func verbByName(name string) (Verb, bool) {
	for _, v := range Verbs() {
		if v.Name == name {
			return v, true
		}
	}
	return Verb{}, false
}

// IsVerb reports whether name is a catalog verb.
func IsVerb(name string) bool { _, ok := verbByName(name); return ok }

func minIDs(n int) func(v any) error {
	return func(v any) error {
		ids := reflect.ValueOf(v).Elem().FieldByName("IDs")
		if ids.Len() < n {
			return fmt.Errorf("ids: needs at least %d shapes, got %d", n, ids.Len())
		}
		return nil
	}
}

func checkPlace(v any) error {
	p := v.(*PlaceParams)
	beside := p.ReferenceID != nil && *p.ReferenceID != "" && p.Side != nil
	at := p.X != nil && p.Y != nil
	if beside == at {
		return fmt.Errorf("place: give either reference_id with side, or x with y")
	}
	return nil
}

// commandType is the command type of a catalog action.
func (v Verb) commandType() string {
	if v.Command != "" {
		return v.Command
	}
	return v.Name
}

// checkLineRange checks start_line ≤ end_line of a line range verb.
func checkLineRange(v any) error {
	p := reflect.ValueOf(v).Elem()
	if start, end := p.FieldByName("StartLine").Int(), p.FieldByName("EndLine").Int(); start > end {
		return fmt.Errorf("start_line %d is after end_line %d", start, end)
	}
	return nil
}

// checkForms checks the params of a verb whose command has forms (move,
// resize): they are exactly one form's, its required ones all present.
func checkForms(name string, def canvas.VerbDef, present map[string]json.RawMessage) error {
	if len(def.Forms) == 0 {
		return nil
	}
	var alts []string
	for _, f := range def.Forms {
		alts = append(alts, strings.Join(f.Required, ", "))
		fits := true
		for _, k := range f.Required {
			if raw, ok := present[k]; !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				fits = false
			}
		}
		for k := range present {
			if !slices.Contains(f.Required, k) && !slices.Contains(f.Optional, k) {
				fits = false
			}
		}
		if fits {
			return nil
		}
	}
	return fmt.Errorf("%s: give either %s", name, strings.Join(alts, "; or "))
}

// Validate checks one action against the catalog: a known verb, params that
// decode into the verb's type with no unknown fields (props may carry other
// keys), required fields present, enums, numeric bounds and lengths.
// Macro verbs validate as themselves; the sanitizer expands them.
func Validate(a Action) error {
	v, ok := verbByName(a.Name)
	if !ok {
		return fmt.Errorf("unknown action %q", a.Name)
	}
	raw, err := json.Marshal(a.Params)
	if err != nil {
		return fmt.Errorf("%s: params are not JSON: %v", a.Name, err)
	}
	if a.Params == nil {
		raw = []byte("{}")
	}
	// Unknown fields are errors, except inside props.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return fmt.Errorf("%s: params must be an object", a.Name)
	}
	known := jsonFields(v.Params)
	for k := range top {
		if _, ok := known[k]; !ok {
			return fmt.Errorf("%s: unknown param %q", a.Name, k)
		}
	}
	pv := reflect.New(v.Params)
	if err := json.Unmarshal(raw, pv.Interface()); err != nil {
		return fmt.Errorf("%s: %v", a.Name, err)
	}
	if err := checkRequired(v.Params, top, a.Name); err != nil {
		return err
	}
	if err := checkValue(pv.Elem(), a.Name); err != nil {
		return err
	}
	for _, f := range []string{"id", "parent_id", "group_id"} {
		if s, ok := a.Params[f].(string); ok && strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s.%s: must not be empty", a.Name, f)
		}
	}
	if ids, ok := a.Params["ids"].([]any); ok {
		for i, x := range ids {
			if s, _ := x.(string); strings.TrimSpace(s) == "" {
				return fmt.Errorf("%s.ids[%d]: must be a non-empty string", a.Name, i)
			}
		}
	}
	if err := checkForms(a.Name, v.def, top); err != nil {
		return err
	}
	if v.check != nil {
		if err := v.check(pv.Interface()); err != nil {
			return err
		}
	}
	// Props as the canvas model takes them for the kind (the server checks
	// an update's props once merged with the shape's).
	if props, ok := a.Params["props"].(map[string]any); ok {
		kind := ""
		switch a.Name {
		case "create_shape":
			kind, _ = a.Params["type"].(string)
		case "connect", "update_edge":
			kind = canvas.EdgeKind
		}
		if kind != "" {
			if err := canvas.ValidateProps(kind, props, a.Name+".props"); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps JSON names to struct fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _ := jsonName(f)
		if name != "" {
			out[name] = f
		}
	}
	return out
}

func jsonName(f reflect.StructField) (name string, optional bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	parts := strings.Split(tag, ",")
	name = parts[0]
	if name == "" {
		name = f.Name
	}
	for _, p := range parts[1:] {
		if p == "omitempty" {
			optional = true
		}
	}
	return name, optional
}

func checkRequired(t reflect.Type, present map[string]json.RawMessage, path string) error {
	for i := 0; i < t.NumField(); i++ {
		name, opt := jsonName(t.Field(i))
		if opt {
			continue
		}
		raw, ok := present[name]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return fmt.Errorf("%s.%s: is required", path, name)
		}
		if t.Field(i).Type.Kind() == reflect.Slice && bytes.Equal(bytes.TrimSpace(raw), []byte("[]")) && t.Field(i).Type.Elem().Kind() == reflect.String {
			return fmt.Errorf("%s.%s: must not be empty", path, name)
		}
	}
	return nil
}

// checkValue walks a decoded value and checks the tags.
func checkValue(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkValue(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _ := jsonName(f)
			fv := v.Field(i)
			p := path + "." + name
			if err := checkTags(f, fv, p); err != nil {
				return err
			}
			if err := checkValue(fv, p); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := checkValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTags(f reflect.StructField, v reflect.Value, path string) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if e := f.Tag.Get("enum"); e != "" && v.Kind() == reflect.String {
		set := enumSet(e)
		if !inEnum(set, v.String()) {
			return fmt.Errorf("%s: %q is not one of %s", path, v.String(), strings.Join(set, ", "))
		}
	}
	if v.Kind() == reflect.Int {
		v = reflect.ValueOf(float64(v.Int()))
	}
	if v.Kind() == reflect.Float64 {
		x := v.Float()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s: must be a finite number", path)
		}
		if s := f.Tag.Get("min"); s != "" {
			if m, _ := strconv.ParseFloat(s, 64); x < m {
				return fmt.Errorf("%s: %v is below the minimum %s", path, x, s)
			}
		}
		if s := f.Tag.Get("max"); s != "" {
			if m, _ := strconv.ParseFloat(s, 64); x > m {
				return fmt.Errorf("%s: %v is above the maximum %s", path, x, s)
			}
		}
		if s := f.Tag.Get("xmin"); s != "" {
			if m, _ := strconv.ParseFloat(s, 64); x <= m {
				return fmt.Errorf("%s: %v must be above %s", path, x, s)
			}
		}
	}
	if s := f.Tag.Get("minlen"); s != "" {
		n, _ := strconv.Atoi(s)
		if (v.Kind() == reflect.String || v.Kind() == reflect.Slice) && v.Len() < n {
			return fmt.Errorf("%s: shorter than %d", path, n)
		}
	}
	if s := f.Tag.Get("maxlen"); s != "" {
		n, _ := strconv.Atoi(s)
		if (v.Kind() == reflect.String || v.Kind() == reflect.Slice) && v.Len() > n {
			return fmt.Errorf("%s: longer than %d", path, n)
		}
	}
	return nil
}

// Schema returns the JSON Schema (draft 2020-12) of a catalog verb's params:
// a command's args as package canvas defines them (props in the catalog's
// compact form), or the agent's own param type.
func Schema(v Verb) map[string]any {
	if v.Command != "" {
		s, _ := canvas.ArgsJSONSchema(v.Command, schemaOptions)
		return s
	}
	return canvas.ObjectJSONSchema(v.Params, schemaOptions)
}

// schemaOptions write props as the catalog's compact ShapeProps and EdgeStyle.
var schemaOptions = canvas.JSONSchemaOptions{
	Ref: func(name string) map[string]any {
		switch name {
		case "NodeProps", "NodePropsPatch":
			s := canvas.ObjectJSONSchema(reflect.TypeOf(ShapeProps{}), schemaOptionsNoRef)
			s["description"] = "the shape's props; each kind takes the keys docs/model.md lists for it"
			return s
		case "EdgeProps", "EdgePropsPatch":
			return canvas.ObjectJSONSchema(reflect.TypeOf(EdgeStyle{}), schemaOptionsNoRef)
		}
		return nil
	},
	Enum: agentEnums,
}

var schemaOptionsNoRef = canvas.JSONSchemaOptions{Enum: agentEnums, Open: []reflect.Type{reflect.TypeOf(ShapeProps{}), reflect.TypeOf(EdgeStyle{})}}

// CatalogEntry is one verb as served and prompted.
type CatalogEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Kind        string `json:"kind"` // canvas | meta | macro
	// Command is the command type a canvas action is sent as; its params
	// are that command's args.
	Command string          `json:"command,omitempty"`
	Params  map[string]any  `json:"params"`
	Sample  json.RawMessage `json:"sample"`
}

// Catalog is the action catalog with JSON Schemas: the body of GET
// /api/canvas-agent/catalog and the "tool catalog" part of every prompt.
type Catalog struct {
	Version  string         `json:"version"`
	Protocol string         `json:"protocol"`
	Actions  []CatalogEntry `json:"actions"`
}

// OutputProtocol describes the model output format (docs/api.md, "The canvas agent").
const OutputProtocol = `Reply with exactly one JSON object {"actions": [{"name": "<verb>", "params": {...}}, ...]} and nothing else. Each action's params must match its schema. Refer to shapes by the ids in the canvas context or by the ids you gave in create_shape.`

// BuildCatalog builds the catalog from Verbs.
func BuildCatalog() Catalog { return buildCatalog(func(Verb) bool { return true }) }

// buildCatalog builds the catalog of the verbs keep accepts.
func buildCatalog(keep func(Verb) bool) Catalog {
	c := Catalog{Version: ActionsVersion, Protocol: OutputProtocol}
	for _, v := range Verbs() {
		if !keep(v) {
			continue
		}
		kind := "canvas"
		if v.Meta {
			kind = "meta"
		} else if v.Macro {
			kind = "macro"
		}
		c.Actions = append(c.Actions, CatalogEntry{Name: v.Name, Description: v.Description, Kind: kind, Command: v.Command, Params: Schema(v), Sample: json.RawMessage(v.Sample)})
	}
	return c
}

// CatalogJSON returns the catalog encoded as JSON (deterministic: map keys sorted).
func CatalogJSON() []byte { return catalogJSON(func(Verb) bool { return true }) }

func catalogJSON(keep func(Verb) bool) []byte {
	b, _ := json.Marshal(buildCatalog(keep))
	return b
}
