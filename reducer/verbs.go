package reducer

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// verbs is the dispatch table of command types. It is built once by
// verbTable and never modified.
var verbs = verbTable()

// verbTable returns the dispatch table: command type → decideFunc.
func verbTable() map[string]decideFunc {
	return map[string]decideFunc{
		// API-surface verbs
		"create_node": txVerb(decideCreateNode),
		"update_node": txVerb(decideUpdateNode),
		"delete_node": txVerb(decideDeleteNode),
		"create_edge": txVerb(decideCreateEdge),
		"update_edge": txVerb(decideUpdateEdge),
		"delete_edge": txVerb(decideDeleteEdge),
		// TLDraw-native verbs
		"create_shape": txVerb(decideCreateShape),
		"update_shape": txVerb(decideUpdateShape),
		"delete_shape": txVerb(decideDeleteShape),
		"move":         txVerb(decideMove),
		"resize":       txVerb(decideResize),
		"rotate":       txVerb(decideRotate),
		"group":        txVerb(decideGroup),
		"ungroup":      txVerb(decideUngroup),
		"align":        txVerb(decideAlign),
		"distribute":   txVerb(decideDistribute),
		"stack":        txVerb(decideStack),
		"reorder":      txVerb(decideReorder),
		// Document verbs (doc*.go)
		"replace_lines":  decideReplaceLines,
		"insert_lines":   decideInsertLines,
		"delete_lines":   decideDeleteLines,
		"search_replace": decideSearchReplace,
		// History verbs (doc_history.go)
		"undo":               decideUndo,
		"redo":               decideRedo,
		"revert_to_snapshot": decideRevertToSnapshot,
		CmdRevertCommits:     decideRevertCommits, // revert_commits.go
		// Files (import.go)
		CmdImportScene: txVerb(decideImportScene),
	}
}

// CommandTypes returns the command types Decide knows, sorted.
func CommandTypes() []string {
	out := make([]string, 0, len(verbs))
	for k := range verbs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func knownTypes() string { return strings.Join(CommandTypes(), ", ") }

// decodeArgs strictly decodes args into v (a pointer to a struct with json
// tags). An unknown field is reported on that field with the allowed names.
func decodeArgs(args json.RawMessage, v any) error {
	err := canvas.DecodeStrict(args, v)
	if err == nil {
		return nil
	}
	var fe *canvas.FieldError
	if errors.As(err, &fe) && fe.Field == "args" {
		const marker = `json: unknown field "`
		if i := strings.Index(fe.Reason, marker); i >= 0 {
			name := fe.Reason[i+len(marker):]
			if j := strings.IndexByte(name, '"'); j >= 0 {
				name = name[:j]
			}
			var top map[string]json.RawMessage
			if json.Unmarshal(args, &top) == nil {
				if _, ok := top[name]; !ok { // not top-level: inside a nested object
					return canvas.Unprocessable("args", "unknown field %q inside a nested object; see the command's documented args", name)
				}
			}
			return canvas.Unprocessable("args."+name, "unknown field; this command takes: %s", strings.Join(fieldNames(v), ", "))
		}
	}
	if fe != nil {
		// Speak JSON, not Go: "must be float64" → "must be a number".
		fe.Reason = jsonTypeNames().Replace(fe.Reason)
	}
	return err
}

func jsonTypeNames() *strings.Replacer {
	return strings.NewReplacer(
		"must be float64", "must be a number",
		"must be *float64", "must be a number",
		"must be string", "must be a string",
		"must be *string", "must be a string",
		"must be []string", "must be an array of strings",
		"must be map[string]interface {}", "must be an object",
		"must be bool", "must be true or false",
		"must be *bool", "must be true or false",
		"must be int", "must be an integer",
	)
}

// fieldNames lists the json names of the fields of the struct v points to.
func fieldNames(v any) []string {
	rt := reflect.TypeOf(v)
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if rt.Kind() != reflect.Struct {
		return nil
	}
	out := make([]string, 0, rt.NumField())
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// enumError is the FieldError for a value outside an enum.
func enumError(field, got string, allowed ...string) error {
	if got == "" {
		return canvas.Unprocessable(field, "is required: one of %s", strings.Join(allowed, ", "))
	}
	return canvas.Unprocessable(field, "must be one of %s; got %q", strings.Join(allowed, ", "), got)
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}
