package reducer

import (
	"reflect"

	"github.com/canvasd/canvasd/canvas"
)

// Props are JSON objects. They never hold null inside an object (a null in a
// merge patch removes the key; creates drop nulls), so a JSON merge patch
// (RFC 7386) can express any change between two props values. Props maps are
// never mutated in place once built: updates build new maps that share the
// unchanged values.

// cloneValue deep-copies a JSON-shaped value.
func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = cloneValue(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = cloneValue(x)
		}
		return out
	}
	return v
}

// stripNulls returns a deep copy of p without null members in any object
// (nulls inside arrays stay). A nil p gives an empty map.
func stripNulls(p map[string]any) map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		if v == nil {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			out[k] = stripNulls(m)
			continue
		}
		out[k] = cloneValue(v)
	}
	return out
}

// dropNulls removes the null members of every object in p, in place
// (nulls inside arrays stay, as stripNulls leaves them).
func dropNulls(p map[string]any) {
	for k, v := range p {
		switch t := v.(type) {
		case nil:
			delete(p, k)
		case map[string]any:
			dropNulls(t)
		}
	}
}

// mergeProps applies the JSON merge patch patch to old without modifying
// either; the result shares unchanged values with old.
func mergeProps(old, patch map[string]any) map[string]any {
	out := make(map[string]any, len(old)+len(patch))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			om, _ := out[k].(map[string]any)
			out[k] = mergeProps(om, pv)
		default:
			out[k] = cloneValue(v)
		}
	}
	return out
}

// mergeDiff returns the smallest JSON merge patch that turns old into nw, or
// nil when they are equal.
func mergeDiff(old, nw map[string]any) map[string]any {
	var p map[string]any
	set := func(k string, v any) {
		if p == nil {
			p = make(map[string]any)
		}
		p[k] = v
	}
	for k, nv := range nw {
		if ov, ok := old[k]; ok {
			om, oIsMap := ov.(map[string]any)
			nm, nIsMap := nv.(map[string]any)
			if oIsMap && nIsMap {
				if sub := mergeDiff(om, nm); sub != nil {
					set(k, sub)
				}
				continue
			}
			if propValuesEqual(ov, nv) {
				continue
			}
		}
		set(k, cloneValue(nv))
	}
	for k := range old {
		if _, ok := nw[k]; !ok {
			set(k, nil)
		}
	}
	return p
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// propValuesEqual reports whether two prop values are equal JSON values; a
// canvas.DocText equals the string or DocText holding the same text.
func propValuesEqual(a, b any) bool {
	_, aDoc := a.(canvas.DocText)
	_, bDoc := b.(canvas.DocText)
	if aDoc != bDoc { // DocTexts chunk canonically: DeepEqual compares two of them

		as, aok := canvas.PropText(a)
		bs, bok := canvas.PropText(b)
		return aok && bok && as == bs
	}
	return reflect.DeepEqual(a, b)
}
