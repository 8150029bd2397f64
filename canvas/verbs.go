package canvas

import (
	"reflect"
	"strings"
	"sync"
)

// The arguments of every command type, defined once. The reducer decodes
// a command's args into its type here; openapi.yaml's args schemas and
// CommandEnvelope (verbs_schema.go), the agent's action catalog and the MCP
// tool schemas are generated from the same types, so none of them can
// drift from what the server accepts.
//
// Struct tags of the args types, read by the schema generator (and by the
// agent's validator):
//
//	json     the argument's name; without omitempty it is required
//	desc     what it means (the schema's description)
//	enum     a named set of values (EnumValues) or a list "a|b|c"
//	min, max the range of a number (of each item of a list); xmin an exclusive minimum
//	minlen, maxlen  the length of a string, the items of a list
//	default  the value the server takes when it is absent (in the description)
//	raw      a string kept verbatim (white space included): no minLength
//	ref      the field's schema is a named schema of openapi.yaml (NodeProps, EdgeProps);
//	         a merge patch of props (NodePropsPatch, EdgePropsPatch) is an open object there
//
// A struct field whose type is a named schema type of this file (Transform,
// IDList) is written as a reference to that schema.

// Transform is the box of create_node and update_node.
type Transform struct {
	X        *float64 `json:"x,omitempty"`
	Y        *float64 `json:"y,omitempty"`
	W        *float64 `json:"w,omitempty" min:"0"`
	H        *float64 `json:"h,omitempty" min:"0"`
	Rotation *float64 `json:"rotation,omitempty" desc:"Radians."`
}

// IDList is a list of node ids, at least one.
type IDList []string

// CreateNodeArgs are the args of create_node.
type CreateNodeArgs struct {
	ID        string         `json:"id,omitempty" maxlen:"128" desc:"Minted when absent and returned in created_ids."`
	Name      string         `json:"name,omitempty" raw:"true" maxlen:"1024"`
	Type      string         `json:"type,omitempty" enum:"node_type" default:"geo"`
	Transform *Transform     `json:"transform,omitempty"`
	ParentID  string         `json:"parent_id,omitempty" raw:"true" desc:"A group or frame to put it in (\"\": the top level)."`
	Props     map[string]any `json:"props,omitempty" ref:"NodeProps" desc:"The node's props: the keys of its kind's schema (NodeProps) and meta; anything else is a 422 naming args.props.<key>. richText without text fills text in with its plain text."`
}

// UpdateNodeArgs are the args of update_node.
type UpdateNodeArgs struct {
	ID        string         `json:"id"`
	Name      *string        `json:"name,omitempty" raw:"true" maxlen:"1024"`
	ParentID  *string        `json:"parent_id,omitempty" raw:"true" desc:"Moves the node into this group or frame (\"\" for the top level), where it is on the canvas; not into itself or one of its descendants. A group left without children is deleted."`
	Transform *Transform     `json:"transform,omitempty"`
	Props     map[string]any `json:"props,omitempty" ref:"NodePropsPatch" desc:"A JSON merge patch of the node's props (null deletes a key); the merged value of every key it sets must follow the kind's schema (NodeProps), else 422 naming args.props.<key>. Setting richText without text sets text to its plain text; setting or removing text without richText removes richText."`
}

// IDArgs are the args of delete_node, delete_edge and ungroup.
type IDArgs struct {
	ID string `json:"id"`
}

// CreateEdgeArgs are the args of create_edge: an arrow whose ends are bound
// to nodes (from, to) or free ("" or absent: then props.points is needed).
type CreateEdgeArgs struct {
	ID    string         `json:"id,omitempty" maxlen:"128" desc:"Minted when absent and returned in created_ids."`
	From  string         `json:"from,omitempty" raw:"true" desc:"A node id, or \"\" for a free end."`
	To    string         `json:"to,omitempty" raw:"true" desc:"A node id, or \"\" for a free end."`
	Type  string         `json:"type,omitempty" maxlen:"64" default:"arrow" desc:"A label for the client's use (depends_on, flow, ...)."`
	Props map[string]any `json:"props,omitempty" ref:"EdgeProps" desc:"The keys of EdgeProps; anything else is a 422 naming args.props.<key>."`
}

// UpdateEdgeArgs are the args of update_edge: ends bound ("id") or freed
// (""), props merged.
type UpdateEdgeArgs struct {
	ID    string         `json:"id"`
	From  *string        `json:"from,omitempty" raw:"true" desc:"A node id, or \"\" to free the end."`
	To    *string        `json:"to,omitempty" raw:"true" desc:"A node id, or \"\" to free the end."`
	Props map[string]any `json:"props,omitempty" ref:"EdgePropsPatch" desc:"A JSON merge patch of the edge's props (null deletes a key); the merged value of every key it sets must follow EdgeProps."`
}

// CreateShapeArgs are the args of create_shape.
type CreateShapeArgs struct {
	ID       string         `json:"id,omitempty" maxlen:"128" desc:"Minted when absent and returned in created_ids."`
	Type     string         `json:"type" enum:"node_type"`
	X        *float64       `json:"x"`
	Y        *float64       `json:"y"`
	W        *float64       `json:"w,omitempty" min:"0"`
	H        *float64       `json:"h,omitempty" min:"0"`
	Rotation *float64       `json:"rotation,omitempty" desc:"Radians."`
	ParentID string         `json:"parent_id,omitempty" raw:"true" desc:"A group or frame to put it in."`
	Name     string         `json:"name,omitempty" raw:"true" maxlen:"1024"`
	Props    map[string]any `json:"props,omitempty" ref:"NodeProps" desc:"The node's props: the keys of its kind's schema (NodeProps) and meta; anything else is a 422 naming args.props.<key>."`
}

// UpdateShapeArgs are the args of update_shape.
type UpdateShapeArgs struct {
	ID       string         `json:"id"`
	X        *float64       `json:"x,omitempty"`
	Y        *float64       `json:"y,omitempty"`
	W        *float64       `json:"w,omitempty" min:"0"`
	H        *float64       `json:"h,omitempty" min:"0"`
	Rotation *float64       `json:"rotation,omitempty" desc:"Radians."`
	Name     *string        `json:"name,omitempty" raw:"true" maxlen:"1024"`
	ParentID *string        `json:"parent_id,omitempty" raw:"true" desc:"Moves the node into this group or frame (\"\" for the top level), where it is on the canvas; not into itself or one of its descendants. A group left without children is deleted."`
	Props    map[string]any `json:"props,omitempty" ref:"NodePropsPatch" desc:"A JSON merge patch of the node's props, as in UpdateNodeArgs."`
}

// IDsArgs are the args of delete_shape.
type IDsArgs struct {
	IDs IDList `json:"ids"`
}

// MoveArgs are the args of move: {ids, dx, dy} (relative) or {id, x, y}
// (absolute: the node's top-left corner).
type MoveArgs struct {
	IDs IDList   `json:"ids,omitempty"`
	DX  *float64 `json:"dx,omitempty"`
	DY  *float64 `json:"dy,omitempty"`
	ID  string   `json:"id,omitempty"`
	X   *float64 `json:"x,omitempty"`
	Y   *float64 `json:"y,omitempty"`
}

// ResizeArgs are the args of resize: {ids, scale_x, scale_y, origin_x?,
// origin_y?} (scale) or {id, w, h} (set one shape's size).
type ResizeArgs struct {
	IDs     IDList   `json:"ids,omitempty"`
	ScaleX  *float64 `json:"scale_x,omitempty" xmin:"0"`
	ScaleY  *float64 `json:"scale_y,omitempty" xmin:"0"`
	OriginX *float64 `json:"origin_x,omitempty"`
	OriginY *float64 `json:"origin_y,omitempty"`
	ID      string   `json:"id,omitempty"`
	W       *float64 `json:"w,omitempty" min:"0"`
	H       *float64 `json:"h,omitempty" min:"0"`
}

// RotateArgs are the args of rotate.
type RotateArgs struct {
	IDs     IDList   `json:"ids"`
	Degrees *float64 `json:"degrees"`
	OriginX *float64 `json:"origin_x,omitempty"`
	OriginY *float64 `json:"origin_y,omitempty"`
}

// GroupArgs are the args of group.
type GroupArgs struct {
	IDs     IDList `json:"ids"`
	GroupID string `json:"group_id,omitempty" maxlen:"128" desc:"The new group's id; minted when absent."`
}

// AlignArgs are the args of align.
type AlignArgs struct {
	IDs       IDList `json:"ids"`
	Alignment string `json:"alignment" enum:"alignment"`
}

// DistributeArgs are the args of distribute.
type DistributeArgs struct {
	IDs       IDList `json:"ids"`
	Direction string `json:"direction" enum:"direction"`
}

// StackArgs are the args of stack.
type StackArgs struct {
	IDs       IDList   `json:"ids"`
	Direction string   `json:"direction" enum:"direction"`
	Gap       *float64 `json:"gap" desc:"The space between neighbours, in page units (0: touching)."`
}

// ReorderArgs are the args of reorder.
type ReorderArgs struct {
	IDs IDList `json:"ids"`
	Op  string `json:"op" enum:"reorder"`
}

// ReplaceLinesArgs are the args of replace_lines. Lines are 1-indexed and inclusive.
type ReplaceLinesArgs struct {
	NodeID     string  `json:"node_id" desc:"The doc node."`
	StartLine  int     `json:"start_line" min:"1" desc:"The first line to replace."`
	EndLine    int     `json:"end_line" min:"1" desc:"The last line to replace (inclusive)."`
	NewContent *string `json:"new_content" raw:"true" desc:"The lines that replace them; a trailing newline ends the last line."`
	Reason     string  `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// InsertLinesArgs are the args of insert_lines.
type InsertLinesArgs struct {
	NodeID          string  `json:"node_id" desc:"The doc node."`
	InsertAfterLine int     `json:"insert_after_line" min:"0" desc:"Insert after this line; 0 inserts at the start."`
	Content         *string `json:"content" raw:"true" desc:"The lines to insert."`
	Reason          string  `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// DeleteLinesArgs are the args of delete_lines.
type DeleteLinesArgs struct {
	NodeID    string `json:"node_id" desc:"The doc node."`
	StartLine int    `json:"start_line" min:"1" desc:"The first line to delete."`
	EndLine   int    `json:"end_line" min:"1" desc:"The last line to delete (inclusive)."`
	Reason    string `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// SearchReplaceArgs are the args of search_replace.
type SearchReplaceArgs struct {
	NodeID          string `json:"node_id" desc:"The doc node."`
	SearchPattern   string `json:"search_pattern" raw:"true" minlen:"1" desc:"Text, or an RE2 regular expression when regex is true; matched line by line."`
	ReplaceWith     string `json:"replace_with" raw:"true" desc:"The replacement; with regex, $1 or ${name} insert groups."`
	CaseSensitive   *bool  `json:"case_sensitive,omitempty" default:"true"`
	Regex           bool   `json:"regex,omitempty" desc:"search_pattern is an RE2 regular expression."`
	MaxReplacements int    `json:"max_replacements,omitempty" min:"0" desc:"0 (the default) replaces every match."`
	Reason          string `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// HistoryArgs are the args of undo and redo: none.
type HistoryArgs struct{}

// RevertToSnapshotArgs are the args of revert_to_snapshot.
type RevertToSnapshotArgs struct {
	SnapshotID string `json:"snapshot_id"`
	NodeID     string `json:"node_id,omitempty" desc:"Revert only this document node (default the whole canvas)."`
	Reason     string `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// RevertCommitsArgs are the args of revert_commits.
type RevertCommitsArgs struct {
	Revs   []int64 `json:"revs" minlen:"1" maxlen:"50000" min:"1" desc:"The revisions of the commits to revert."`
	Reason string  `json:"reason,omitempty" raw:"true" desc:"Why (recorded with the change)."`
}

// MaxImportObjects bounds the nodes and edges of one import_scene.
const MaxImportObjects = 50_000

// ImportSceneArgs are the args of import_scene: the nodes and edges of a
// file, written in one commit, all or nothing.
type ImportSceneArgs struct {
	Mode  string       `json:"mode,omitempty" enum:"merge|replace" default:"merge" desc:"merge: each node and edge joins the canvas, replacing one with the same id; replace: everything else on the canvas is deleted."`
	Nodes []ImportNode `json:"nodes,omitempty" maxlen:"50000" desc:"Placed in front of the canvas in the order given (z-order)."`
	Edges []ImportEdge `json:"edges,omitempty" maxlen:"50000"`
}

// ImportNode is a node of an import: every field as a node has it. A
// parent_id may name a node of the import or of the canvas (a group or a
// frame), in any order. Type group is allowed here (a file's groups).
type ImportNode struct {
	ID       string         `json:"id" maxlen:"128"`
	Type     string         `json:"type" enum:"node_type"`
	Name     string         `json:"name,omitempty" raw:"true" maxlen:"1024"`
	ParentID string         `json:"parent_id,omitempty" raw:"true"`
	X        float64        `json:"x,omitempty"`
	Y        float64        `json:"y,omitempty"`
	W        float64        `json:"w,omitempty" min:"0"`
	H        float64        `json:"h,omitempty" min:"0"`
	Rotation float64        `json:"rotation,omitempty" desc:"Radians."`
	Props    map[string]any `json:"props,omitempty" ref:"NodeProps"`
}

// ImportEdge is an edge of an import; from and to may name nodes of the
// import or of the canvas ("" for a free end, which needs props.points).
type ImportEdge struct {
	ID    string         `json:"id" maxlen:"128"`
	From  string         `json:"from,omitempty" raw:"true"`
	To    string         `json:"to,omitempty" raw:"true"`
	Type  string         `json:"type,omitempty" maxlen:"64" default:"arrow"`
	Props map[string]any `json:"props,omitempty" ref:"EdgeProps"`
}

// VerbDef defines one command type: its args and how they are documented.
type VerbDef struct {
	// Type is the command type (CommandEnvelope.type).
	Type string
	// Args is the type of its args (a struct of this file).
	Args reflect.Type
	// Schema names its args schema in openapi.yaml (undo and redo share HistoryArgs).
	Schema string
	// Summary says what it does, in a sentence (tool and action descriptions).
	Summary string
	// Description says more about its args (the args schema's description).
	Description string
	// Forms, when set, are the alternative sets of args it takes: each
	// names the required args of the form and the optional ones.
	Forms []ArgsForm
	// History is what it reads of the canvas's history besides the current
	// state: the engine reads it from the store before the command queues
	// for the canvas's writer, which decides without I/O.
	History HistoryNeed
}

// HistoryNeed is what a verb needs of the canvas's history to be decided,
// beyond its current state (VerbDef.History). What it names is in the log
// already when the command arrives, and the log does not change, so it
// stays true however the canvas moves on before the command is decided.
type HistoryNeed uint8

const (
	// NoHistory: the current state is all it needs.
	NoHistory HistoryNeed = iota
	// RevertedCommits: what the commits its args name changed
	// (Command.Revert; the args are revert_commits'.)
	RevertedCommits
	// SnapshotState: the canvas's state at the named snapshot its args name
	// (Command.Snapshot; the args are revert_to_snapshot's).
	SnapshotState
)

// verbHistory is VerbDef.History by command type, for the engine's hot path.
var verbHistory = func() map[string]HistoryNeed {
	m := map[string]HistoryNeed{}
	for _, v := range Verbs() {
		if v.History != NoHistory {
			m[v.Type] = v.History
		}
	}
	return m
}()

// VerbHistory returns what a command type needs of the canvas's history
// (VerbDef.History; NoHistory for an unknown type).
func VerbHistory(typ string) HistoryNeed { return verbHistory[typ] }

// ArgsForm is one form of a verb's args: these required, those optional.
type ArgsForm struct {
	Required, Optional []string
}

// CommandSchemaName is the name of a verb's command schema in openapi.yaml
// (create_node → CreateNodeCommand).
func (v VerbDef) CommandSchemaName() string { return camel(v.Type) + "Command" }

func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// EnumValues returns the values of an enum tag: a named set of this
// package (node_type, alignment, direction, reorder) or a list "a|b|c".
// ok is false for a name this package does not define.
func EnumValues(tag string) (values []string, ok bool) {
	switch tag {
	case "node_type":
		return NodeTypes, true
	case "alignment":
		return []string{"left", "right", "top", "bottom", "center-horizontal", "center-vertical"}, true
	case "direction":
		return []string{"horizontal", "vertical"}, true
	case "reorder":
		return []string{"bring_to_front", "send_to_back", "bring_forward", "send_backward"}, true
	}
	if strings.Contains(tag, "|") {
		return strings.Split(tag, "|"), true
	}
	return nil, false
}

// Verbs returns every command type with its args, in the order openapi.yaml
// lists them. The list is built per call; callers may keep it. A verb
// defined elsewhere (an importer's, say) is added here, with its args type.
func Verbs() []VerbDef {
	of := func(v any) reflect.Type { return reflect.TypeOf(v) }
	return []VerbDef{
		{Type: "create_node", Args: of(CreateNodeArgs{}), Schema: "CreateNodeArgs", Summary: "Create a node.",
			Description: "Every field is optional: `type` defaults to geo, a missing transform places the node at (0, 0) with the default size (100 × 100; notes 200 × 200, documents 600 × 400)."},
		{Type: "update_node", Args: of(UpdateNodeArgs{}), Schema: "UpdateNodeArgs", Summary: "Change a node's name, parent, box or props (props merge)."},
		{Type: "delete_node", Args: of(IDArgs{}), Schema: "DeleteNodeArgs", Summary: "Delete a node, its descendants and its edges."},
		{Type: "create_edge", Args: of(CreateEdgeArgs{}), Schema: "CreateEdgeArgs", Summary: "Create an edge (an arrow) between two nodes, or with free ends.",
			Description: "An arrow. Each end is bound to the node `from` or `to` names, or free (\"\", the default). Without `props.points` both ends must be bound: the server computes the path from the middle of `from` towards the middle of `to`, each end where that line leaves its node's outline (or at the middle of `fromSide`/`toSide`; an elbow edge is routed). A bound end given away from its node (more than 32 units outside its box) is moved onto its outline."},
		{Type: "update_edge", Args: of(UpdateEdgeArgs{}), Schema: "UpdateEdgeArgs", Summary: "Bind or free an edge's ends, or change its props (props merge).",
			Description: "`from`/`to` bind an end to another node or free it (\"\"): a freed end stays where it is, a newly bound one moves onto its node. `props` is a JSON merge patch; `points: null` computes the path again (both ends bound). An elbow edge whose ends, sides or routing change is routed again."},
		{Type: "delete_edge", Args: of(IDArgs{}), Schema: "DeleteEdgeArgs", Summary: "Delete an edge."},
		{Type: "create_shape", Args: of(CreateShapeArgs{}), Schema: "CreateShapeArgs", Summary: "Create a shape (a node) at x, y."},
		{Type: "update_shape", Args: of(UpdateShapeArgs{}), Schema: "UpdateShapeArgs", Summary: "Change a shape's position, size, rotation, name, parent or props (props merge)."},
		{Type: "delete_shape", Args: of(IDsArgs{}), Schema: "DeleteShapeArgs", Summary: "Delete shapes (and their edges)."},
		{Type: "move", Args: of(MoveArgs{}), Schema: "MoveArgs", Summary: "Move shapes by dx, dy, or one shape to x, y.",
			Description: "Relative (`ids`, `dx`, `dy`) or absolute (`id`, `x`, `y`).",
			Forms:       []ArgsForm{{Required: []string{"ids", "dx", "dy"}}, {Required: []string{"id", "x", "y"}}}},
		{Type: "resize", Args: of(ResizeArgs{}), Schema: "ResizeArgs", Summary: "Scale shapes, or set one shape's size.",
			Description: "Scale (`ids`, `scale_x`, `scale_y`, optional origin) or set the size of one shape (`id`, `w`, `h`).",
			Forms:       []ArgsForm{{Required: []string{"ids", "scale_x", "scale_y"}, Optional: []string{"origin_x", "origin_y"}}, {Required: []string{"id", "w", "h"}}}},
		{Type: "rotate", Args: of(RotateArgs{}), Schema: "RotateArgs", Summary: "Rotate shapes by degrees.",
			Description: "Rotates about the shapes' common centre unless an origin is given."},
		{Type: "group", Args: of(GroupArgs{}), Schema: "GroupArgs", Summary: "Group shapes.",
			Description: "Creates a `group` node that becomes the children's `parent_id`."},
		{Type: "ungroup", Args: of(IDArgs{}), Schema: "UngroupArgs", Summary: "Dissolve a group."},
		{Type: "align", Args: of(AlignArgs{}), Schema: "AlignArgs", Summary: "Align shapes' edges or centres.",
			Description: "left makes every left edge equal to the smallest; top likewise; and so on."},
		{Type: "distribute", Args: of(DistributeArgs{}), Schema: "DistributeArgs", Summary: "Make the gaps between shapes equal.",
			Description: "The outermost shapes stay; the gaps between neighbours become equal."},
		{Type: "stack", Args: of(StackArgs{}), Schema: "StackArgs", Summary: "Line shapes up one after another with a gap.",
			Description: "The first shape (by position) stays; each next one starts `gap` after the previous one ends."},
		{Type: "reorder", Args: of(ReorderArgs{}), Schema: "ReorderArgs", Summary: "Change shapes' z-order."},
		{Type: "replace_lines", Args: of(ReplaceLinesArgs{}), Schema: "ReplaceLinesArgs", Summary: "Replace lines start_line..end_line of a document with new_content.",
			Description: "Lines are 1-indexed and inclusive."},
		{Type: "insert_lines", Args: of(InsertLinesArgs{}), Schema: "InsertLinesArgs", Summary: "Insert content after line insert_after_line of a document (0: at the top)."},
		{Type: "delete_lines", Args: of(DeleteLinesArgs{}), Schema: "DeleteLinesArgs", Summary: "Delete lines start_line..end_line of a document."},
		{Type: "search_replace", Args: of(SearchReplaceArgs{}), Schema: "SearchReplaceArgs", Summary: "Replace matches of search_pattern with replace_with, line by line, in a document.",
			Description: "RE2 syntax when `regex`; `replace_with` names groups as `$1` or `${name}`."},
		{Type: "undo", Args: of(HistoryArgs{}), Schema: "HistoryArgs", Summary: "Undo the caller's own last command.",
			Description: "`undo` / `redo` take no arguments (`{}`): they act on the calling actor's own last command (409 if someone else changed what it would restore). History is appended, never rewritten."},
		{Type: "redo", Args: of(HistoryArgs{}), Schema: "HistoryArgs", Summary: "Redo the command the caller last undid."},
		{Type: "revert_to_snapshot", Args: of(RevertToSnapshotArgs{}), Schema: "RevertToSnapshotArgs", Summary: "Make the canvas (or one document) as it was at a named snapshot.",
			History: SnapshotState},
		{Type: "revert_commits", Args: of(RevertCommitsArgs{}), Schema: "RevertCommitsArgs", Summary: "Revert earlier commits as one new commit.",
			Description: revertCommitsDescription, History: RevertedCommits},
		{Type: "import_scene", Args: of(ImportSceneArgs{}), Schema: "ImportSceneArgs", Summary: "Write the nodes and edges of a file as one commit, all or nothing.",
			Description: "`POST /api/canvases/{id}/import` sends it; any client may. Every node and edge is checked as `create_node` and `create_edge` check theirs; the first refused one refuses all (422 naming `args.nodes[3].props.fill`). `parent_id` and the edges' ends may name nodes of the import or of the canvas, in any order; `group` nodes are allowed (a file's groups: they need members). At most 50,000 nodes and edges."},
	}
}

// VerbByType returns the definition of a command type (its Forms are shared: read them, do not change them).
func VerbByType(typ string) (VerbDef, bool) {
	v, ok := verbsByType()[typ]
	return v, ok
}

// verbsByType is Verbs by type, built once.
var verbsByType = sync.OnceValue(func() map[string]VerbDef {
	m := map[string]VerbDef{}
	for _, v := range Verbs() {
		m[v.Type] = v
	}
	return m
})

const revertCommitsDescription = "Reverts earlier commits (of any actors, `undo` and `redo` included) as one new commit: every node " +
	"and edge they changed goes back to its value before the oldest of them that changed it (created " +
	"ones are deleted, deleted ones come back, documents change by line splices). The server reads " +
	"what those commits changed from the log, so any commit in it can be named: " +
	"up to 50,000 revisions, spanning at most 200,000 commits from the oldest to the newest, the " +
	"spans of a batch's reverts counted together (422 past either, and for a revision not in the " +
	"log yet, such as one of the same batch). An entity already as it was " +
	"before them (a later `undo` took their change back, say) is left as it is; a revert that finds " +
	"every one so commits no change, and commits that changed nothing are a 422. If any other entity " +
	"is no longer as those commits left it (someone changed it since, or later work of the same " +
	"actor), or a commit not listed changed it between two listed ones, nothing is reverted: 409 with " +
	"`recovery_ops`. The revert is the caller's own command: one `undo` undoes it. For others' `undo` " +
	"and `redo`, the values it brought back are current again: an actor whose change those commits " +
	"overwrote can `undo` it after the revert, while an older change of the same entity by someone " +
	"else stays a 409 (undoing it would overwrite the newer one); so does any where the undo history " +
	"of the reverted commits up to the first that changed the entity (each actor's last 100 " +
	"commands, and what it has undone since its last one) is gone."
