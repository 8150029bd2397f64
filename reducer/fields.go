package reducer

import (
	"fmt"

	"github.com/canvasd/canvasd/canvas"
)

// field is one patchable top-level field of a node or an edge: its JSON name
// and how to read and write it. Patches (Apply), diffs (Decide) and undo
// inverses all go through these tables, so a new field is one line here.
// Props, a JSON merge patch rather than a value, is handled by the callers.
type field[T any] struct {
	name string
	same func(a, b *T) bool // compares without boxing (diff runs on every change)
	get  func(x *T) any
	set  func(x *T, v any) error
}

// entityFields is the field table of an entity type, with access to its props.
type entityFields[T any] struct {
	kind   string
	fields []field[T]
	byName map[string]field[T]
	props  func(x *T) *map[string]any
}

func newEntityFields[T any](kind string, props func(x *T) *map[string]any, fields ...field[T]) entityFields[T] {
	t := entityFields[T]{kind: kind, fields: fields, byName: make(map[string]field[T], len(fields)), props: props}
	for _, f := range fields {
		t.byName[f.name] = f
	}
	return t
}

func stringField[T any](name string, p func(x *T) *string) field[T] {
	return field[T]{name: name, same: func(a, b *T) bool { return *p(a) == *p(b) },
		get: func(x *T) any { return *p(x) }, set: func(x *T, v any) error {
			s, err := patchString(name, v)
			if err == nil {
				*p(x) = s
			}
			return err
		}}
}

func numberField[T any](name string, p func(x *T) *float64) field[T] {
	return field[T]{name: name, same: func(a, b *T) bool { return *p(a) == *p(b) },
		get: func(x *T) any { return *p(x) }, set: func(x *T, v any) error {
			f, err := patchNumber(name, v)
			if err == nil {
				*p(x) = f
			}
			return err
		}}
}

// nodeFields and edgeFields are read-only tables built once.
var (
	nodeFields = newEntityFields("node", func(n *canvas.Node) *map[string]any { return &n.Props },
		stringField("type", func(n *canvas.Node) *string { return &n.Type }),
		stringField("name", func(n *canvas.Node) *string { return &n.Name }),
		stringField("parent_id", func(n *canvas.Node) *string { return &n.ParentID }),
		numberField("x", func(n *canvas.Node) *float64 { return &n.X }),
		numberField("y", func(n *canvas.Node) *float64 { return &n.Y }),
		numberField("w", func(n *canvas.Node) *float64 { return &n.W }),
		numberField("h", func(n *canvas.Node) *float64 { return &n.H }),
		numberField("rotation", func(n *canvas.Node) *float64 { return &n.Rotation }),
		stringField("index", func(n *canvas.Node) *string { return &n.Index }))
	edgeFields = newEntityFields("edge", func(e *canvas.Edge) *map[string]any { return &e.Props },
		stringField("from", func(e *canvas.Edge) *string { return &e.From }),
		stringField("to", func(e *canvas.Edge) *string { return &e.To }),
		stringField("type", func(e *canvas.Edge) *string { return &e.Type }))
)

// patch applies patch p to x (a private copy); "props" is a JSON merge patch.
func (t entityFields[T]) patch(x *T, p map[string]any) error {
	for k, v := range p {
		var err error
		if k == "props" {
			props := t.props(x)
			*props, err = patchProps(*props, v)
		} else if f, ok := t.byName[k]; ok {
			err = f.set(x, v)
		} else {
			err = fmt.Errorf("patch field %q is not a patchable %s field: %w", k, t.kind, canvas.ErrInvalid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// diff returns the patch turning o into n (nil when they are equal).
func (t entityFields[T]) diff(o, n *T) map[string]any {
	var p map[string]any
	set := func(k string, v any) {
		if p == nil {
			p = make(map[string]any, 4)
		}
		p[k] = v
	}
	for _, f := range t.fields {
		if !f.same(o, n) {
			set(f.name, f.get(n))
		}
	}
	if op, np := *t.props(o), *t.props(n); !sameMap(op, np) {
		if d := mergeDiff(op, np); d != nil {
			set("props", d)
		}
	}
	return p
}

// invert returns the patch that undoes p on x (x as it was before p); ok is
// false when p holds a field it cannot invert.
func (t entityFields[T]) invert(x *T, p map[string]any) (inv map[string]any, ok bool) {
	inv = make(map[string]any, len(p))
	for k, v := range p {
		if k == "props" {
			pm, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			inv[k] = invertMergePatch(*t.props(x), pm)
		} else if f, ok := t.byName[k]; ok {
			inv[k] = f.get(x)
		} else {
			return nil, false
		}
	}
	return inv, true
}
