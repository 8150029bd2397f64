package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// StandardCatalogID is the A2UI v0.8 standard catalog's id, as the v0.8
// protocol names it. The built-in A2UI page renders this catalog;
// beginRendering may name it, or a catalog of AcceptedCatalogIDs, or omit
// catalogId (the protocol's default).
const StandardCatalogID = "https://a2ui.org/specification/v0_8/standard_catalog_definition.json"

// MinimalCatalogID is the v0.8 minimal catalog, a strict subset of the
// standard one (its messages are standard ones), accepted too.
const MinimalCatalogID = "https://a2ui.org/specification/v0_8/catalogs/minimal/minimal_catalog.json"

// legacyCatalogID is the id earlier canvasd releases asked for (the
// catalog's address on GitHub), still accepted.
const legacyCatalogID = "https://github.com/google/A2UI/blob/main/specification/0.8/json/standard_catalog_definition.json"

// AcceptedCatalogIDs are the catalogIds beginRendering may name.
var AcceptedCatalogIDs = []string{StandardCatalogID, MinimalCatalogID, legacyCatalogID}

// A2UI v0.8 server→client message kinds.
const (
	KindSurfaceUpdate   = "surfaceUpdate"
	KindDataModelUpdate = "dataModelUpdate"
	KindBeginRendering  = "beginRendering"
	KindDeleteSurface   = "deleteSurface"
)

const (
	maxIDLen       = 256
	maxLineErrors  = 100
	maxValueDepth  = 32
	maxStringField = 64 << 10
)

// LineError is one bad line of an A2UI push.
type LineError struct {
	Line   int    `json:"line"`            // 1-based line number in the JSONL body
	Field  string `json:"field,omitempty"` // JSON path inside the line, e.g. "surfaceUpdate.components[2].component"
	Reason string `json:"reason"`
}

// ValidationError rejects a whole A2UI push: nothing was applied. It lists
// every bad line (at most 100) and wraps canvas.ErrUnprocessable (HTTP 422);
// a problem document should carry Lines as "errors".
type ValidationError struct {
	Lines []LineError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "A2UI push rejected, nothing applied; %d bad line(s): ", len(e.Lines))
	for i, l := range e.Lines {
		if i > 0 {
			b.WriteString("; ")
		}
		if i == 5 {
			fmt.Fprintf(&b, "and %d more (see errors)", len(e.Lines)-5)
			break
		}
		fmt.Fprintf(&b, "line %d", l.Line)
		if l.Field != "" {
			fmt.Fprintf(&b, " %s", l.Field)
		}
		fmt.Fprintf(&b, ": %s", l.Reason)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, canvas.ErrUnprocessable) true.
func (e *ValidationError) Unwrap() error { return canvas.ErrUnprocessable }

// A2UIMessage is one validated A2UI v0.8 server→client message.
type A2UIMessage struct {
	Line      int
	Kind      string
	SurfaceID string
	Raw       json.RawMessage // the line, compacted

	Components []Component // surfaceUpdate

	Root      string          // beginRendering
	Styles    json.RawMessage // beginRendering, may be nil
	CatalogID string          // beginRendering, may be ""

	Path     []string       // dataModelUpdate: decoded JSON-pointer tokens; empty = the whole model
	Contents map[string]any // dataModelUpdate: the contents as a JSON object
}

// Component is one component definition of a surfaceUpdate.
type Component struct {
	ID    string
	Type  string          // a standard catalog name, e.g. "Text"
	Raw   json.RawMessage // the whole {"id", "component", "weight"?} object
	Refs  []ComponentRef  // ids this component names (children, child, ...)
	index int
}

// ComponentRef is one reference from a component to another by id.
type ComponentRef struct {
	Field string // e.g. "component.Card.child"
	ID    string
}

type lineErrs struct{ list []LineError }

func (l *lineErrs) add(line int, field, format string, a ...any) {
	if len(l.list) < maxLineErrors {
		l.list = append(l.list, LineError{Line: line, Field: field, Reason: fmt.Sprintf(format, a...)})
	}
}

// ParseA2UI splits a JSONL body into messages and validates each line on its
// own (message kind, required fields, catalog component names and
// properties). Blank lines are skipped. Cross-line checks (id references,
// limits) are done by Host.PushA2UI against the session's surfaces. Any bad
// line makes the result a *ValidationError listing all of them.
func ParseA2UI(body []byte, maxLines int) ([]A2UIMessage, error) {
	var errs lineErrs
	var msgs []A2UIMessage
	lines := bytes.Split(body, []byte("\n"))
	count := 0
	for i, ln := range lines {
		ln = bytes.TrimRight(ln, "\r")
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		count++
		if maxLines > 0 && count > maxLines {
			errs.add(i+1, "", "more than %d messages in one push; split the file", maxLines)
			break
		}
		m, ok := parseLine(i+1, ln, &errs)
		if ok {
			msgs = append(msgs, m)
		}
	}
	if count == 0 && len(errs.list) == 0 {
		errs.add(1, "", "no A2UI messages: send one JSON object per line (surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface)")
	}
	if len(errs.list) > 0 {
		return nil, &ValidationError{Lines: errs.list}
	}
	return msgs, nil
}

func parseLine(n int, ln []byte, errs *lineErrs) (A2UIMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(ln))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		errs.add(n, "", "not valid JSON: %v", err)
		return A2UIMessage{}, false
	}
	if dec.More() {
		errs.add(n, "", "more than one JSON value on the line; put one message per line")
		return A2UIMessage{}, false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		errs.add(n, "", "a message must be a JSON object with exactly one of surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface")
		return A2UIMessage{}, false
	}
	if len(obj) != 1 {
		errs.add(n, "", "a message must have exactly one key (surfaceUpdate, dataModelUpdate, beginRendering or deleteSurface), got %d: %s", len(obj), keyList(obj))
		return A2UIMessage{}, false
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, ln)
	m := A2UIMessage{Line: n, Raw: json.RawMessage(buf.Bytes())}
	before := len(errs.list)
	for k, body := range obj {
		m.Kind = k
		b, ok := body.(map[string]any)
		if !ok {
			if isKind(k) {
				errs.add(n, k, "must be an object")
			} else {
				errs.add(n, k, "unknown message kind; A2UI v0.8 has surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface (v0.9's createSurface/updateComponents are not supported)")
			}
			return m, false
		}
		switch k {
		case KindSurfaceUpdate:
			parseSurfaceUpdate(n, b, &m, errs)
		case KindDataModelUpdate:
			parseDataModelUpdate(n, b, &m, errs)
		case KindBeginRendering:
			parseBeginRendering(n, b, &m, errs)
		case KindDeleteSurface:
			checkKeys(n, k, b, errs, "surfaceId")
			m.SurfaceID = reqString(n, k+".surfaceId", b["surfaceId"], errs)
		default:
			errs.add(n, k, "unknown message kind; A2UI v0.8 has surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface (v0.9's createSurface/updateComponents are not supported)")
		}
	}
	return m, len(errs.list) == before
}

func isKind(k string) bool {
	return k == KindSurfaceUpdate || k == KindDataModelUpdate || k == KindBeginRendering || k == KindDeleteSurface
}

func keyList(m map[string]any) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func checkKeys(n int, field string, obj map[string]any, errs *lineErrs, allowed ...string) {
	for k := range obj {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			errs.add(n, field+"."+k, "unknown property; allowed: %s", strings.Join(allowed, ", "))
		}
	}
}

func reqString(n int, field string, v any, errs *lineErrs) string {
	s, ok := v.(string)
	switch {
	case v == nil:
		errs.add(n, field, "is required")
	case !ok:
		errs.add(n, field, "must be a string")
	case s == "":
		errs.add(n, field, "must not be empty")
	case len(s) > maxIDLen:
		errs.add(n, field, "is longer than %d characters", maxIDLen)
	default:
		return s
	}
	return ""
}

func parseSurfaceUpdate(n int, b map[string]any, m *A2UIMessage, errs *lineErrs) {
	const f = KindSurfaceUpdate
	checkKeys(n, f, b, errs, "surfaceId", "components")
	m.SurfaceID = reqString(n, f+".surfaceId", b["surfaceId"], errs)
	list, ok := b["components"].([]any)
	switch {
	case b["components"] == nil:
		errs.add(n, f+".components", "is required: a non-empty array of {id, component: {<Type>: {...}}}")
		return
	case !ok:
		errs.add(n, f+".components", "must be an array")
		return
	case len(list) == 0:
		errs.add(n, f+".components", "must not be empty")
		return
	}
	for i, c := range list {
		field := fmt.Sprintf("%s.components[%d]", f, i)
		co, ok := c.(map[string]any)
		if !ok {
			errs.add(n, field, "must be an object {id, component}")
			continue
		}
		checkKeys(n, field, co, errs, "id", "component", "weight")
		comp := Component{ID: reqString(n, field+".id", co["id"], errs), index: i}
		if w, ok := co["weight"]; ok {
			if _, isNum := w.(json.Number); !isNum {
				errs.add(n, field+".weight", "must be a number")
			}
		}
		wrap, ok := co["component"].(map[string]any)
		if !ok {
			if co["component"] == nil {
				errs.add(n, field+".component", "is required: an object with exactly one key, the component type (e.g. {\"Text\": {...}})")
			} else {
				errs.add(n, field+".component", "must be an object with exactly one key, the component type")
			}
			continue
		}
		if len(wrap) != 1 {
			errs.add(n, field+".component", "must have exactly one key, the component type; got %d (%s)", len(wrap), keyList(wrap))
			continue
		}
		for typ, props := range wrap {
			comp.Type = typ
			spec, known := standardCatalog[typ]
			if !known {
				errs.add(n, field+".component", "unknown component %q; the standard catalog has %s", typ, catalogNames())
				continue
			}
			po, ok := props.(map[string]any)
			if !ok {
				errs.add(n, field+".component."+typ, "must be an object of properties")
				continue
			}
			comp.Refs = checkProps(n, field+".component."+typ, spec, po, errs)
			for i := range comp.Refs {
				comp.Refs[i].Field = strings.TrimPrefix(comp.Refs[i].Field, f+".")
			}
		}
		raw, _ := json.Marshal(co)
		comp.Raw = raw
		m.Components = append(m.Components, comp)
	}
}

func parseBeginRendering(n int, b map[string]any, m *A2UIMessage, errs *lineErrs) {
	const f = KindBeginRendering
	checkKeys(n, f, b, errs, "surfaceId", "root", "styles", "catalogId")
	m.SurfaceID = reqString(n, f+".surfaceId", b["surfaceId"], errs)
	m.Root = reqString(n, f+".root", b["root"], errs)
	if c, ok := b["catalogId"]; ok {
		s, isStr := c.(string)
		if !isStr || (s != "" && !inList(AcceptedCatalogIDs, s)) {
			errs.add(n, f+".catalogId", "only the v0.8 standard catalog (or its minimal subset) is rendered; omit catalogId or use %q", StandardCatalogID)
		}
		m.CatalogID = s
	}
	if st, ok := b["styles"]; ok {
		so, isObj := st.(map[string]any)
		if !isObj {
			errs.add(n, f+".styles", "must be an object {font?, primaryColor?}")
			return
		}
		if pc, ok := so["primaryColor"]; ok {
			s, isStr := pc.(string)
			if !isStr || !hexColor.MatchString(s) {
				errs.add(n, f+".styles.primaryColor", "must be a #rrggbb colour")
			}
		}
		if fo, ok := so["font"]; ok {
			if _, isStr := fo.(string); !isStr {
				errs.add(n, f+".styles.font", "must be a string")
			}
		}
		m.Styles, _ = json.Marshal(so)
	}
}

var hexColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

func parseDataModelUpdate(n int, b map[string]any, m *A2UIMessage, errs *lineErrs) {
	const f = KindDataModelUpdate
	checkKeys(n, f, b, errs, "surfaceId", "path", "contents")
	m.SurfaceID = reqString(n, f+".surfaceId", b["surfaceId"], errs)
	if p, ok := b["path"]; ok {
		s, isStr := p.(string)
		if !isStr {
			errs.add(n, f+".path", "must be a string such as \"/user\"")
		} else if m.Path = pointerTokens(s); len(m.Path) > maxValueDepth {
			errs.add(n, f+".path", "has %d segments; at most %d (a path and its contents' valueMap nesting together)", len(m.Path), maxValueDepth)
			m.Path = nil
		}
	}
	list, ok := b["contents"].([]any)
	if !ok {
		if b["contents"] == nil {
			errs.add(n, f+".contents", "is required: an array of {key, valueString|valueNumber|valueBoolean|valueMap}")
		} else {
			errs.add(n, f+".contents", "must be an array of {key, value*} entries")
		}
		return
	}
	m.Contents = parseEntries(n, f+".contents", list, len(m.Path), errs)
}

// pointerTokens splits a data-model path ("/a/b", "a/b", "/" or "") into
// JSON-pointer tokens, unescaping ~1 and ~0.
func pointerTokens(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	toks := strings.Split(p, "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

func parseEntries(n int, field string, list []any, depth int, errs *lineErrs) map[string]any {
	out := make(map[string]any, len(list))
	if depth > maxValueDepth {
		errs.add(n, field, "nested deeper than %d levels (the path's segments count too)", maxValueDepth)
		return out
	}
	for i, e := range list {
		ef := fmt.Sprintf("%s[%d]", field, i)
		eo, ok := e.(map[string]any)
		if !ok {
			errs.add(n, ef, "must be an object {key, value*}")
			continue
		}
		key, ok := eo["key"].(string)
		if !ok {
			errs.add(n, ef+".key", "is required and must be a string")
			continue
		}
		var val any
		nvals := 0
		for k, v := range eo {
			switch k {
			case "key":
			case "valueString":
				nvals++
				if _, ok := v.(string); !ok {
					errs.add(n, ef+".valueString", "must be a string")
				}
				val = v
			case "valueNumber":
				nvals++
				if _, ok := v.(json.Number); !ok {
					errs.add(n, ef+".valueNumber", "must be a number")
				}
				val = v
			case "valueBoolean":
				nvals++
				if _, ok := v.(bool); !ok {
					errs.add(n, ef+".valueBoolean", "must be true or false")
				}
				val = v
			case "valueMap":
				nvals++
				sub, ok := v.([]any)
				if !ok {
					errs.add(n, ef+".valueMap", "must be an array of {key, value*} entries")
					continue
				}
				val = parseEntries(n, ef+".valueMap", sub, depth+1, errs)
			default:
				errs.add(n, ef+"."+k, "unknown property; an entry is {key, valueString|valueNumber|valueBoolean|valueMap}")
			}
		}
		if nvals != 1 {
			errs.add(n, ef, "needs exactly one of valueString, valueNumber, valueBoolean, valueMap (got %d)", nvals)
			continue
		}
		out[key] = val
	}
	return out
}
