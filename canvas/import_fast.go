package canvas

import "encoding/json"

// DecodeImportSceneArgsFast decodes import_scene args without reflection
// when they have the shape an import writes: an object of mode, nodes and
// edges, each node and edge an object of its fields spelled as their json
// names, each at most once, with strings, numbers and an object of props
// (decoded as DecodeStrict decodes them: numbers stay json.Number). It
// reports false for anything else, which DecodeStrict then decodes (or
// rejects, with its message) the general way; where it reports true the
// result is what that would have decoded.
func DecodeImportSceneArgsFast(data []byte) (ImportSceneArgs, bool) {
	var a ImportSceneArgs
	p := fastParser{data: data}
	ok := p.members(func(key string) bool {
		switch key {
		case "mode":
			var ok bool
			a.Mode, ok = p.str()
			return ok
		case "nodes":
			a.Nodes = []ImportNode{} // [] is an empty slice, not nil, as encoding/json makes it
			return p.elements(func() bool {
				a.Nodes = append(a.Nodes, ImportNode{})
				return p.importNode(&a.Nodes[len(a.Nodes)-1])
			})
		case "edges":
			a.Edges = []ImportEdge{}
			return p.elements(func() bool {
				a.Edges = append(a.Edges, ImportEdge{})
				return p.importEdge(&a.Edges[len(a.Edges)-1])
			})
		}
		return false
	})
	if !ok || skipSpace(data, p.i) != len(data) {
		return ImportSceneArgs{}, false
	}
	return a, true
}

// importNode reads an ImportNode object.
func (p *fastParser) importNode(n *ImportNode) bool {
	return p.members(func(key string) bool {
		var ok bool
		switch key {
		case "id":
			n.ID, ok = p.str()
		case "type":
			n.Type, ok = p.str()
		case "name":
			n.Name, ok = p.str()
		case "parent_id":
			n.ParentID, ok = p.str()
		case "x":
			n.X, ok = p.float()
		case "y":
			n.Y, ok = p.float()
		case "w":
			n.W, ok = p.float()
		case "h":
			n.H, ok = p.float()
		case "rotation":
			n.Rotation, ok = p.float()
		case "props":
			n.Props, ok = p.props()
		}
		return ok
	})
}

// importEdge reads an ImportEdge object.
func (p *fastParser) importEdge(e *ImportEdge) bool {
	return p.members(func(key string) bool {
		var ok bool
		switch key {
		case "id":
			e.ID, ok = p.str()
		case "from":
			e.From, ok = p.str()
		case "to":
			e.To, ok = p.str()
		case "type":
			e.Type, ok = p.str()
		case "props":
			e.Props, ok = p.props()
		}
		return ok
	})
}

// props reads an object of props (not null).
func (p *fastParser) props() (map[string]any, bool) {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return nil, false
	}
	return p.object()
}

// members reads an object whose members member reads, each name at most
// once (encoding/json would merge a repeated struct member: not here).
// member is called with p at the value and reports whether it read it.
func (p *fastParser) members(member func(key string) bool) bool {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return false
	}
	p.i = skipSpace(p.data, p.i+1)
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return true
	}
	var seen [10]string
	n := 0
	for {
		k, ok := p.str()
		if !ok || !p.colon() {
			return false
		}
		for _, s := range seen[:n] {
			if s == k {
				return false
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n], n = k, n+1
		p.i = skipSpace(p.data, p.i)
		if !member(k) {
			return false
		}
		end, ok := p.next('}')
		if !ok {
			return false
		}
		if end {
			return true
		}
		p.i = skipSpace(p.data, p.i)
	}
}

// elements reads an array (not null) whose elements element reads.
func (p *fastParser) elements(element func() bool) bool {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) || p.data[p.i] != '[' {
		return false
	}
	p.i = skipSpace(p.data, p.i+1)
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !element() {
			return false
		}
		end, ok := p.next(']')
		if !ok {
			return false
		}
		if end {
			return true
		}
	}
}

// AppendJSON appends the args as json.Marshal writes them, without
// reflection for what a file's import holds.
func (a *ImportSceneArgs) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	sep := func() {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
	}
	if a.Mode != "" {
		b = appendQuoted(append(b, `"mode":`...), a.Mode)
	}
	var err error
	if len(a.Nodes) > 0 {
		sep()
		b = append(b, `"nodes":[`...)
		for i := range a.Nodes {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = a.Nodes[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(a.Edges) > 0 {
		sep()
		b = append(b, `"edges":[`...)
		for i := range a.Edges {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = a.Edges[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendJSON appends the node as json.Marshal writes it (omitempty: zero
// strings, numbers and empty props are left out).
func (n *ImportNode) appendJSON(b []byte) ([]byte, error) {
	b = appendQuoted(append(b, `{"id":`...), n.ID)
	b = appendQuoted(append(b, `,"type":`...), n.Type)
	if n.Name != "" {
		b = appendQuoted(append(b, `,"name":`...), n.Name)
	}
	if n.ParentID != "" {
		b = appendQuoted(append(b, `,"parent_id":`...), n.ParentID)
	}
	var err error
	for _, f := range [...]struct {
		key string
		v   float64
	}{{`,"x":`, n.X}, {`,"y":`, n.Y}, {`,"w":`, n.W}, {`,"h":`, n.H}, {`,"rotation":`, n.Rotation}} {
		if f.v == 0 {
			continue
		}
		if b, err = appendJSONFloat(append(b, f.key...), f.v); err != nil {
			_, err = json.Marshal(n) // its error
			return nil, err
		}
	}
	if len(n.Props) > 0 {
		if b, err = appendJSONObject(append(b, `,"props":`...), n.Props); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSON appends the edge as json.Marshal writes it.
func (e *ImportEdge) appendJSON(b []byte) ([]byte, error) {
	b = appendQuoted(append(b, `{"id":`...), e.ID)
	for _, f := range [...]struct{ key, v string }{{`,"from":`, e.From}, {`,"to":`, e.To}, {`,"type":`, e.Type}} {
		if f.v != "" {
			b = appendQuoted(append(b, f.key...), f.v)
		}
	}
	if len(e.Props) > 0 {
		var err error
		if b, err = appendJSONObject(append(b, `,"props":`...), e.Props); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
