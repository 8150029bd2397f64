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
	"sort"
	"strconv"
	"strings"
)

// ActionsVersion is the v of every agent:action envelope.
const ActionsVersion = "tldraw-actions/1"

// Action is one model action: a verb name and its params. ID is stable across
// the partial previews of one logical action within a session.
type Action struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
}

// TLDraw enums the sanitizer coerces to and the validator accepts.
var (
	enumColor  = []string{"black", "grey", "light-violet", "violet", "blue", "light-blue", "yellow", "orange", "green", "light-green", "light-red", "red", "white"}
	enumFill   = []string{"none", "semi", "solid", "pattern", "fill"}
	enumDash   = []string{"draw", "solid", "dashed", "dotted"}
	enumSize   = []string{"s", "m", "l", "xl"}
	enumFont   = []string{"draw", "sans", "serif", "mono"}
	enumAlignH = []string{"start", "middle", "end"}
	enumGeo    = []string{"rectangle", "ellipse", "triangle", "diamond", "pentagon", "hexagon", "octagon", "star", "rhombus", "rhombus-2", "oval", "trapezoid", "arrow-right", "arrow-left", "arrow-up", "arrow-down", "x-box", "check-box", "heart", "cloud"}
	// ShapeTypes are the TLDraw shape types an agent may create.
	enumShapeType = []string{"geo", "note", "text", "draw", "arrow", "line", "frame", "image"}
	enumAlignment = []string{"left", "right", "top", "bottom", "center-horizontal", "center-vertical"}
	enumDirection = []string{"horizontal", "vertical"}
	enumReorder   = []string{"bring_to_front", "send_to_back", "bring_forward", "send_backward"}
	enumPreset    = []string{"Hero", "Callout", "Quiet", "Wire", "Label"}
	enumTodo      = []string{"open", "done", "skipped"}
)

// enums names the enum sets the `enum:"..."` struct tags refer to.
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
	case "shape_type":
		return enumShapeType
	case "alignment":
		return enumAlignment
	case "direction":
		return enumDirection
	case "reorder":
		return enumReorder
	case "preset":
		return enumPreset
	case "todo_status":
		return enumTodo
	}
	panic("agent: unknown enum set " + name)
}

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

// ShapeProps are the TLDraw style props an action may set. Other keys are
// passed through unchanged (e.g. "w" of a note, "points" of a line).
type ShapeProps struct {
	Color         *string   `json:"color,omitempty" enum:"color" desc:"TLDraw color"`
	Fill          *string   `json:"fill,omitempty" enum:"fill" desc:"fill style of geo shapes"`
	Dash          *string   `json:"dash,omitempty" enum:"dash" desc:"stroke style"`
	Size          *string   `json:"size,omitempty" enum:"size" desc:"stroke/text size"`
	Font          *string   `json:"font,omitempty" enum:"font" desc:"text font"`
	Text          *string   `json:"text,omitempty" maxlen:"10000" desc:"text content (geo, note, text shapes)"`
	Geo           *string   `json:"geo,omitempty" enum:"geo" desc:"geometry of a geo shape"`
	Align         *string   `json:"align,omitempty" enum:"align" desc:"horizontal text alignment"`
	VerticalAlign *string   `json:"verticalAlign,omitempty" enum:"align" desc:"vertical text alignment"`
	Segments      []Segment `json:"segments,omitempty" maxlen:"200" desc:"pen strokes of a draw shape, kept verbatim"`
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

// CreateShapeParams creates one shape.
type CreateShapeParams struct {
	ID       *string     `json:"id,omitempty" maxlen:"200" desc:"your name for the shape; later actions may refer to it"`
	Type     string      `json:"type" enum:"shape_type" desc:"TLDraw shape type"`
	X        float64     `json:"x" min:"-1e6" max:"1e6"`
	Y        float64     `json:"y" min:"-1e6" max:"1e6"`
	W        *float64    `json:"w,omitempty" min:"1" max:"1e5"`
	H        *float64    `json:"h,omitempty" min:"1" max:"1e5"`
	Rotation *float64    `json:"rotation,omitempty" min:"-6.2832" max:"6.2832" desc:"radians"`
	ParentID *string     `json:"parent_id,omitempty" maxlen:"200" desc:"a frame or group to put it in"`
	Name     *string     `json:"name,omitempty" maxlen:"200"`
	Props    *ShapeProps `json:"props,omitempty"`
}

// UpdateShapeParams changes one shape; props merge.
type UpdateShapeParams struct {
	ID       string      `json:"id" maxlen:"200"`
	X        *float64    `json:"x,omitempty" min:"-1e6" max:"1e6"`
	Y        *float64    `json:"y,omitempty" min:"-1e6" max:"1e6"`
	W        *float64    `json:"w,omitempty" min:"1" max:"1e5"`
	H        *float64    `json:"h,omitempty" min:"1" max:"1e5"`
	Rotation *float64    `json:"rotation,omitempty" min:"-6.2832" max:"6.2832" desc:"radians"`
	Name     *string     `json:"name,omitempty" maxlen:"200"`
	Props    *ShapeProps `json:"props,omitempty"`
}

// DeleteShapeParams deletes shapes (and their edges).
type DeleteShapeParams struct {
	IDs []string `json:"ids" maxlen:"500" desc:"shape ids, at least one"`
}

// MoveParams moves shapes by (dx, dy), or one shape to (x, y).
type MoveParams struct {
	IDs []string `json:"ids,omitempty" maxlen:"500" desc:"with dx, dy: move these shapes relatively"`
	DX  *float64 `json:"dx,omitempty" min:"-1e6" max:"1e6"`
	DY  *float64 `json:"dy,omitempty" min:"-1e6" max:"1e6"`
	ID  *string  `json:"id,omitempty" maxlen:"200" desc:"with x, y: move this shape to an absolute position"`
	X   *float64 `json:"x,omitempty" min:"-1e6" max:"1e6"`
	Y   *float64 `json:"y,omitempty" min:"-1e6" max:"1e6"`
}

// ResizeParams scales shapes, or sets one shape's size.
type ResizeParams struct {
	IDs     []string `json:"ids,omitempty" maxlen:"500" desc:"with scale_x, scale_y: scale these shapes"`
	ScaleX  *float64 `json:"scale_x,omitempty" min:"0.01" max:"100"`
	ScaleY  *float64 `json:"scale_y,omitempty" min:"0.01" max:"100"`
	OriginX *float64 `json:"origin_x,omitempty" min:"-1e6" max:"1e6"`
	OriginY *float64 `json:"origin_y,omitempty" min:"-1e6" max:"1e6"`
	ID      *string  `json:"id,omitempty" maxlen:"200" desc:"with w, h: set this shape's size"`
	W       *float64 `json:"w,omitempty" min:"1" max:"1e5"`
	H       *float64 `json:"h,omitempty" min:"1" max:"1e5"`
}

// RotateParams rotates shapes about their common centre (or an origin).
type RotateParams struct {
	IDs     []string `json:"ids" maxlen:"500"`
	Degrees float64  `json:"degrees" min:"-360" max:"360"`
	OriginX *float64 `json:"origin_x,omitempty" min:"-1e6" max:"1e6"`
	OriginY *float64 `json:"origin_y,omitempty" min:"-1e6" max:"1e6"`
}

// GroupParams groups shapes under a new group shape.
type GroupParams struct {
	IDs     []string `json:"ids" maxlen:"500" desc:"at least two shapes"`
	GroupID *string  `json:"group_id,omitempty" maxlen:"200"`
}

// UngroupParams dissolves a group.
type UngroupParams struct {
	ID string `json:"id" maxlen:"200"`
}

// AlignParams aligns shapes' edges or centres.
type AlignParams struct {
	IDs       []string `json:"ids" maxlen:"500" desc:"at least two shapes"`
	Alignment string   `json:"alignment" enum:"alignment"`
}

// DistributeParams spaces shapes evenly; the outermost stay.
type DistributeParams struct {
	IDs       []string `json:"ids" maxlen:"500" desc:"at least three shapes"`
	Direction string   `json:"direction" enum:"direction"`
}

// StackParams lines shapes up with a fixed gap.
type StackParams struct {
	IDs       []string `json:"ids" maxlen:"500" desc:"at least two shapes"`
	Direction string   `json:"direction" enum:"direction"`
	Gap       float64  `json:"gap" min:"0" max:"1e4"`
}

// ReorderParams changes z-order.
type ReorderParams struct {
	IDs []string `json:"ids" maxlen:"500"`
	Op  string   `json:"op" enum:"reorder"`
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

// AddDetailParams asks for a follow-up pass that adds detail.
type AddDetailParams struct {
	Hint *string `json:"hint,omitempty" maxlen:"2000" desc:"what the follow-up pass should add"`
}

// Document verbs: the line-edit commands of a doc node, with the commands'
// args. Line numbers are 1-indexed and inclusive; raw strings (tag raw) are
// kept verbatim, whitespace included.

// ReplaceLinesParams replaces lines start_line..end_line of a document.
type ReplaceLinesParams struct {
	NodeID     string  `json:"node_id" maxlen:"200" desc:"the doc node"`
	StartLine  int     `json:"start_line" min:"1" max:"10000000" desc:"first line to replace"`
	EndLine    int     `json:"end_line" min:"1" max:"10000000" desc:"last line to replace (inclusive)"`
	NewContent string  `json:"new_content" raw:"true" maxlen:"1000000" desc:"the lines that replace them, indented as the code around them; a trailing newline ends the last line"`
	Reason     *string `json:"reason,omitempty" maxlen:"2000" desc:"why (recorded with the change)"`
}

// InsertLinesParams inserts lines after a line of a document (0: at the top).
type InsertLinesParams struct {
	NodeID          string  `json:"node_id" maxlen:"200" desc:"the doc node"`
	InsertAfterLine int     `json:"insert_after_line" min:"0" max:"10000000" desc:"insert after this line; 0 inserts at the top"`
	Content         string  `json:"content" raw:"true" maxlen:"1000000" desc:"the lines to insert, indented as the code around them"`
	Reason          *string `json:"reason,omitempty" maxlen:"2000" desc:"why (recorded with the change)"`
}

// DeleteLinesParams deletes lines start_line..end_line of a document.
type DeleteLinesParams struct {
	NodeID    string  `json:"node_id" maxlen:"200" desc:"the doc node"`
	StartLine int     `json:"start_line" min:"1" max:"10000000" desc:"first line to delete"`
	EndLine   int     `json:"end_line" min:"1" max:"10000000" desc:"last line to delete (inclusive)"`
	Reason    *string `json:"reason,omitempty" maxlen:"2000" desc:"why (recorded with the change)"`
}

// SearchReplaceParams replaces matches of a pattern line by line in a document.
type SearchReplaceParams struct {
	NodeID          string  `json:"node_id" maxlen:"200" desc:"the doc node"`
	SearchPattern   string  `json:"search_pattern" raw:"true" maxlen:"10000" desc:"text, or an RE2 regular expression when regex is true"`
	ReplaceWith     string  `json:"replace_with" raw:"true" maxlen:"100000" desc:"the replacement; with regex, $1 or ${name} insert groups"`
	CaseSensitive   *bool   `json:"case_sensitive,omitempty" desc:"default true"`
	Regex           *bool   `json:"regex,omitempty" desc:"treat search_pattern as an RE2 regular expression"`
	MaxReplacements *int    `json:"max_replacements,omitempty" min:"0" max:"1000000" desc:"0 (default) replaces every match"`
	Reason          *string `json:"reason,omitempty" maxlen:"2000" desc:"why (recorded with the change)"`
}

// SaveSnapshotParams saves the canvas's current revision as a named snapshot.
type SaveSnapshotParams struct {
	Label       *string `json:"label,omitempty" maxlen:"200"`
	Description *string `json:"description,omitempty" maxlen:"2000"`
}

// UndoParams: undo takes no params (it undoes the agent's own last change).
type UndoParams struct{}

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
	// Meta verbs never become commands (think, todo, add_detail, set_viewport,
	// save_snapshot); Macro verbs are expanded by the sanitizer (apply_preset).
	Meta, Macro bool
	// Doc verbs edit a document; they are offered to the model only when the
	// target of the session is a document (DocumentSystemPrompt).
	Doc   bool
	check func(v any) error
}

// Verbs returns the catalog in prompt order. The list is built per call (no
// shared mutable state); callers may keep it.
func Verbs() []Verb {
	t := func(v any) reflect.Type { return reflect.TypeOf(v) }
	return append([]Verb{
		{Name: "create_shape", Description: "Create a shape. Use type draw with props.segments for pen strokes. Give it an id of your own to refer to it later.", Params: t(CreateShapeParams{}),
			Sample: `{"id":"headline","type":"text","x":100,"y":80,"w":640,"props":{"text":"BRUTAL","size":"xl","font":"sans","color":"black"}}`},
		{Name: "update_shape", Description: "Change a shape's position, size, rotation, name or props (props merge).", Params: t(UpdateShapeParams{}),
			Sample: `{"id":"headline","props":{"color":"orange"}}`},
		{Name: "delete_shape", Description: "Delete shapes.", Params: t(DeleteShapeParams{}), Sample: `{"ids":["shape:abc"]}`},
		{Name: "move", Description: "Move shapes by dx, dy; or one shape (id) to x, y.", Params: t(MoveParams{}), Sample: `{"ids":["a","b"],"dx":40,"dy":0}`, check: checkMove},
		{Name: "resize", Description: "Scale shapes by scale_x, scale_y; or set one shape's (id) w, h.", Params: t(ResizeParams{}), Sample: `{"id":"a","w":300,"h":200}`, check: checkResize},
		{Name: "rotate", Description: "Rotate shapes by degrees about their common centre.", Params: t(RotateParams{}), Sample: `{"ids":["a"],"degrees":15}`},
		{Name: "group", Description: "Group shapes.", Params: t(GroupParams{}), Sample: `{"ids":["a","b"]}`, check: minIDs(2)},
		{Name: "ungroup", Description: "Dissolve a group.", Params: t(UngroupParams{}), Sample: `{"id":"g"}`},
		{Name: "align", Description: "Align shapes' edges or centres.", Params: t(AlignParams{}), Sample: `{"ids":["a","b"],"alignment":"left"}`, check: minIDs(2)},
		{Name: "distribute", Description: "Make the gaps between shapes equal; the outermost stay.", Params: t(DistributeParams{}), Sample: `{"ids":["a","b","c"],"direction":"horizontal"}`, check: minIDs(3)},
		{Name: "stack", Description: "Line shapes up one after another with a gap.", Params: t(StackParams{}), Sample: `{"ids":["a","b"],"direction":"vertical","gap":24}`, check: minIDs(2)},
		{Name: "reorder", Description: "Change shapes' z-order.", Params: t(ReorderParams{}), Sample: `{"ids":["a"],"op":"bring_to_front"}`},
		{Name: "set_viewport", Description: "Pan/zoom the viewers' camera to a box (not stored).", Params: t(SetViewportParams{}), Sample: `{"x":0,"y":0,"w":1600,"h":900}`, Meta: true},
		{Name: "think", Description: "Tell the people watching what you are doing (shown in chat).", Params: t(ThinkParams{}), Sample: `{"text":"Laying out a bold hero first."}`, Meta: true},
		{Name: "todo", Description: "Record a todo for this session.", Params: t(TodoParams{}), Sample: `{"text":"Add a footer"}`, Meta: true},
		{Name: "add_detail", Description: "Ask for one more pass that adds detail after this reply.", Params: t(AddDetailParams{}), Sample: `{"hint":"add captions under the sticky notes"}`, Meta: true},
		{Name: "replace_lines", Description: "Replace lines start_line..end_line of a document with new_content.", Params: t(ReplaceLinesParams{}), Doc: true,
			Sample: `{"node_id":"doc1","start_line":15,"end_line":16,"new_content":"  try {\n    await fetch(url)\n  } catch (err) {\n    console.error(err)\n  }\n","reason":"handle network errors"}`, check: checkLineRange},
		{Name: "insert_lines", Description: "Insert content after line insert_after_line of a document (0: at the top).", Params: t(InsertLinesParams{}), Doc: true,
			Sample: `{"node_id":"doc1","insert_after_line":3,"content":"import os\n"}`},
		{Name: "delete_lines", Description: "Delete lines start_line..end_line of a document.", Params: t(DeleteLinesParams{}), Doc: true,
			Sample: `{"node_id":"doc1","start_line":8,"end_line":9}`, check: checkLineRange},
		{Name: "search_replace", Description: "Replace matches of search_pattern with replace_with, line by line, in a document.", Params: t(SearchReplaceParams{}), Doc: true,
			Sample: `{"node_id":"doc1","search_pattern":"colour","replace_with":"color"}`},
		{Name: "save_snapshot", Description: "Save the current version as a named snapshot before a risky change.", Params: t(SaveSnapshotParams{}), Doc: true, Meta: true,
			Sample: `{"label":"before refactor"}`},
		{Name: "undo", Description: "Undo your own last change.", Params: t(UndoParams{}), Doc: true, Sample: `{}`},
		{Name: "apply_preset", Description: "Brand macro: style targetIds with a preset (Hero, Callout, Quiet, Wire, Label), or create a new note with it at x, y.", Params: t(ApplyPresetParams{}), Sample: `{"preset":"Callout","x":100,"y":400,"text":"Raw concrete"}`, Macro: true},
	}, hostVerbs()...) // the canvas host's actions (host_actions.go)
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

func checkMove(v any) error {
	p := v.(*MoveParams)
	rel := len(p.IDs) > 0 && p.DX != nil && p.DY != nil
	abs := p.ID != nil && *p.ID != "" && p.X != nil && p.Y != nil
	if rel == abs {
		return fmt.Errorf("move: give either ids with dx and dy, or id with x and y")
	}
	return nil
}

// checkLineRange checks start_line ≤ end_line of a line range verb.
func checkLineRange(v any) error {
	p := reflect.ValueOf(v).Elem()
	if start, end := p.FieldByName("StartLine").Int(), p.FieldByName("EndLine").Int(); start > end {
		return fmt.Errorf("start_line %d is after end_line %d", start, end)
	}
	return nil
}

func checkResize(v any) error {
	p := v.(*ResizeParams)
	rel := len(p.IDs) > 0 && p.ScaleX != nil && p.ScaleY != nil
	abs := p.ID != nil && *p.ID != "" && p.W != nil && p.H != nil
	if rel == abs {
		return fmt.Errorf("resize: give either ids with scale_x and scale_y, or id with w and h")
	}
	return nil
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
	if v.check != nil {
		if err := v.check(pv.Interface()); err != nil {
			return err
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
		set := enumOrSegment(e)
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
	}
	if s := f.Tag.Get("maxlen"); s != "" {
		n, _ := strconv.Atoi(s)
		if (v.Kind() == reflect.String || v.Kind() == reflect.Slice) && v.Len() > n {
			return fmt.Errorf("%s: longer than %d", path, n)
		}
	}
	return nil
}

func enumOrSegment(name string) []string {
	if name == "segment_type" {
		return []string{"free", "straight"}
	}
	return enumSet(name)
}

// Schema returns the JSON Schema (draft 2020-12 subset) of a param type.
func Schema(t reflect.Type) map[string]any {
	return schemaOf(t, reflect.StructField{})
}

func schemaOf(t reflect.Type, f reflect.StructField) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s := map[string]any{}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		var req []string
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, opt := jsonName(sf)
			if name == "" {
				continue
			}
			props[name] = schemaOf(sf.Type, sf)
			if !opt {
				req = append(req, name)
			}
		}
		s["type"] = "object"
		s["properties"] = props
		if len(req) > 0 {
			sort.Strings(req)
			s["required"] = req
		}
		s["additionalProperties"] = t == reflect.TypeOf(ShapeProps{})
	case reflect.Slice:
		s["type"] = "array"
		s["items"] = schemaOf(t.Elem(), reflect.StructField{})
		if n := f.Tag.Get("maxlen"); n != "" {
			m, _ := strconv.Atoi(n)
			s["maxItems"] = m
		}
	case reflect.String:
		s["type"] = "string"
		if e := f.Tag.Get("enum"); e != "" {
			s["enum"] = enumOrSegment(e)
		} else if f.Tag.Get("raw") == "" {
			s["minLength"] = 1
		}
		if n := f.Tag.Get("maxlen"); n != "" {
			m, _ := strconv.Atoi(n)
			s["maxLength"] = m
		}
	case reflect.Float64:
		s["type"] = "number"
		if v := f.Tag.Get("min"); v != "" {
			m, _ := strconv.ParseFloat(v, 64)
			s["minimum"] = m
		}
		if v := f.Tag.Get("max"); v != "" {
			m, _ := strconv.ParseFloat(v, 64)
			s["maximum"] = m
		}
	case reflect.Bool:
		s["type"] = "boolean"
	case reflect.Int, reflect.Int64:
		s["type"] = "integer"
		if v := f.Tag.Get("min"); v != "" {
			m, _ := strconv.ParseFloat(v, 64)
			s["minimum"] = m
		}
		if v := f.Tag.Get("max"); v != "" {
			m, _ := strconv.ParseFloat(v, 64)
			s["maximum"] = m
		}
	}
	if d := f.Tag.Get("desc"); d != "" {
		s["description"] = d
	}
	return s
}

// CatalogEntry is one verb as served and prompted.
type CatalogEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"` // canvas | meta | macro
	Params      map[string]any  `json:"params"`
	Sample      json.RawMessage `json:"sample"`
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
		c.Actions = append(c.Actions, CatalogEntry{Name: v.Name, Description: v.Description, Kind: kind, Params: Schema(v.Params), Sample: json.RawMessage(v.Sample)})
	}
	return c
}

// CatalogJSON returns the catalog encoded as JSON (deterministic: map keys sorted).
func CatalogJSON() []byte { return catalogJSON(func(Verb) bool { return true }) }

func catalogJSON(keep func(Verb) bool) []byte {
	b, _ := json.Marshal(buildCatalog(keep))
	return b
}
