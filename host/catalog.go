package host

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

type propKind int

const (
	pString propKind = iota
	pBool
	pNumber
	pInt
	pBoundString  // {literalString?, path?}
	pBoundBool    // {literalBoolean?, path?}
	pBoundNumber  // {literalNumber?, path?}
	pBoundArray   // {literalArray?: [string], path?}
	pChildren     // {explicitList: [id]} | {template: {componentId, dataBinding}}
	pRef          // a component id
	pAction       // {name, context?: [{key, value: bound}]}
	pTabItems     // [{title: boundString, child: id}]
	pChoiceOption // [{label: boundString, value: string}]
)

type propSpec struct {
	kind     propKind
	required bool
	enum     []string // for pString, or the literal of pBoundString
}

var (
	alignEnum = []string{"start", "center", "end", "stretch"}
	distEnum  = []string{"start", "center", "end", "spaceBetween", "spaceAround", "spaceEvenly"}
	iconNames = []string{"accountCircle", "add", "arrowBack", "arrowForward", "attachFile", "calendarToday",
		"call", "camera", "check", "close", "delete", "download", "edit", "event", "error", "favorite",
		"favoriteOff", "folder", "help", "home", "info", "locationOn", "lock", "lockOpen", "mail", "menu",
		"moreVert", "moreHoriz", "notificationsOff", "notifications", "payment", "person", "phone", "photo",
		"print", "refresh", "search", "send", "settings", "share", "shoppingCart", "star", "starHalf",
		"starOff", "upload", "visibility", "visibilityOff", "warning"}
)

// standardCatalog is the A2UI v0.8 standard catalog
// (https://a2ui.org/specification/v0_8/standard_catalog_definition.json):
// every component and every property of its definition, with their types,
// enums and required sets; TestCatalogMatchesTheStandardDefinition keeps it
// equal to the definition (in testdata, and the renderer's own copy when
// web/ui's packages are installed). It is read-only after package init.
var standardCatalog = map[string]map[string]propSpec{
	"Text": {
		"text":      {kind: pBoundString, required: true},
		"usageHint": {kind: pString, enum: []string{"h1", "h2", "h3", "h4", "h5", "caption", "body"}},
	},
	"Image": {
		"url":       {kind: pBoundString, required: true},
		"altText":   {kind: pBoundString},
		"fit":       {kind: pString, enum: []string{"contain", "cover", "fill", "none", "scale-down"}},
		"usageHint": {kind: pString, enum: []string{"icon", "avatar", "smallFeature", "mediumFeature", "largeFeature", "header"}},
	},
	"Icon":        {"name": {kind: pBoundString, required: true, enum: iconNames}},
	"Video":       {"url": {kind: pBoundString, required: true}},
	"AudioPlayer": {"url": {kind: pBoundString, required: true}, "description": {kind: pBoundString}},
	"Row": {
		"children":     {kind: pChildren, required: true},
		"distribution": {kind: pString, enum: distEnum},
		"alignment":    {kind: pString, enum: alignEnum},
	},
	"Column": {
		"children":     {kind: pChildren, required: true},
		"distribution": {kind: pString, enum: distEnum},
		"alignment":    {kind: pString, enum: alignEnum},
	},
	"List": {
		"children":  {kind: pChildren, required: true},
		"direction": {kind: pString, enum: []string{"vertical", "horizontal"}},
		"alignment": {kind: pString, enum: alignEnum},
	},
	"Card":    {"child": {kind: pRef, required: true}},
	"Tabs":    {"tabItems": {kind: pTabItems, required: true}},
	"Divider": {"axis": {kind: pString, enum: []string{"horizontal", "vertical"}}},
	"Modal": {
		"entryPointChild": {kind: pRef, required: true},
		"contentChild":    {kind: pRef, required: true},
	},
	"Button": {
		"child":   {kind: pRef, required: true},
		"primary": {kind: pBool},
		"action":  {kind: pAction, required: true},
	},
	"CheckBox": {
		"label": {kind: pBoundString, required: true},
		"value": {kind: pBoundBool, required: true},
	},
	"TextField": {
		"label":            {kind: pBoundString, required: true},
		"text":             {kind: pBoundString},
		"textFieldType":    {kind: pString, enum: []string{"date", "longText", "number", "shortText", "obscured"}},
		"validationRegexp": {kind: pString},
	},
	"DateTimeInput": {
		"value":      {kind: pBoundString, required: true},
		"enableDate": {kind: pBool},
		"enableTime": {kind: pBool},
	},
	"MultipleChoice": {
		"selections":           {kind: pBoundArray, required: true},
		"options":              {kind: pChoiceOption, required: true},
		"maxAllowedSelections": {kind: pInt},
		"variant":              {kind: pString, enum: []string{"checkbox", "chips"}},
		"filterable":           {kind: pBool},
	},
	"Slider": {
		"value":    {kind: pBoundNumber, required: true},
		"minValue": {kind: pNumber},
		"maxValue": {kind: pNumber},
		"label":    {kind: pBoundString},
	},
}

// CatalogComponents returns the standard catalog's component names, sorted.
func CatalogComponents() []string {
	out := make([]string, 0, len(standardCatalog))
	for k := range standardCatalog {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func catalogNames() string { return strings.Join(CatalogComponents(), ", ") }

func sortedKeys(m map[string]propSpec) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkProps validates a component's properties against its spec and
// returns the component ids it references.
//
// It stays over 100 lines because it is one switch over the property kinds
// of the A2UI catalog, each case a few lines of checks reporting into the
// same line errors; a function per kind would only move the cases apart.
func checkProps(n int, field string, spec map[string]propSpec, props map[string]any, errs *lineErrs) []ComponentRef {
	var refs []ComponentRef
	for k := range props {
		if _, ok := spec[k]; !ok {
			errs.add(n, field+"."+k, "unknown property; allowed: %s", strings.Join(sortedKeys(spec), ", "))
		}
	}
	for _, name := range sortedKeys(spec) {
		ps := spec[name]
		v, present := props[name]
		f := field + "." + name
		if !present {
			if ps.required {
				errs.add(n, f, "is required")
			}
			continue
		}
		switch ps.kind {
		case pString:
			s, ok := v.(string)
			if !ok {
				errs.add(n, f, "must be a string")
			} else if ps.enum != nil && !inList(ps.enum, s) {
				errs.add(n, f, "must be one of %s, got %q", strings.Join(ps.enum, ", "), s)
			} else if len(s) > maxStringField {
				errs.add(n, f, "is longer than %d bytes", maxStringField)
			}
		case pBool:
			if _, ok := v.(bool); !ok {
				errs.add(n, f, "must be true or false")
			}
		case pNumber:
			if _, ok := v.(json.Number); !ok {
				errs.add(n, f, "must be a number")
			}
		case pInt:
			num, ok := v.(json.Number)
			if _, err := num.Int64(); !ok || err != nil {
				errs.add(n, f, "must be an integer")
			}
		case pBoundString:
			checkBound(n, f, v, "literalString", ps.enum, errs)
		case pBoundBool:
			checkBound(n, f, v, "literalBoolean", nil, errs)
		case pBoundNumber:
			checkBound(n, f, v, "literalNumber", nil, errs)
		case pBoundArray:
			checkBound(n, f, v, "literalArray", nil, errs)
		case pRef:
			if id := reqString(n, f, v, errs); id != "" {
				refs = append(refs, ComponentRef{Field: f, ID: id})
			}
		case pChildren:
			refs = append(refs, checkChildren(n, f, v, errs)...)
		case pAction:
			checkAction(n, f, v, errs)
		case pTabItems:
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				errs.add(n, f, "must be a non-empty array of {title, child}")
				continue
			}
			for i, it := range list {
				itf := fmt.Sprintf("%s[%d]", f, i)
				io, ok := it.(map[string]any)
				if !ok {
					errs.add(n, itf, "must be an object {title, child}")
					continue
				}
				checkKeys(n, itf, io, errs, "title", "child")
				if t, ok := io["title"]; ok {
					checkBound(n, itf+".title", t, "literalString", nil, errs)
				} else {
					errs.add(n, itf+".title", "is required")
				}
				if id := reqString(n, itf+".child", io["child"], errs); id != "" {
					refs = append(refs, ComponentRef{Field: itf + ".child", ID: id})
				}
			}
		case pChoiceOption:
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				errs.add(n, f, "must be a non-empty array of {label, value}")
				continue
			}
			for i, it := range list {
				itf := fmt.Sprintf("%s[%d]", f, i)
				io, ok := it.(map[string]any)
				if !ok {
					errs.add(n, itf, "must be an object {label, value}")
					continue
				}
				checkKeys(n, itf, io, errs, "label", "value")
				if l, ok := io["label"]; ok {
					checkBound(n, itf+".label", l, "literalString", nil, errs)
				} else {
					errs.add(n, itf+".label", "is required")
				}
				if _, ok := io["value"].(string); !ok {
					errs.add(n, itf+".value", "is required and must be a string")
				}
			}
		}
	}
	return refs
}

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkBound validates a BoundValue: an object with a literal of the given
// kind, a data-model path, or both (initialization shorthand).
func checkBound(n int, f string, v any, literal string, enum []string, errs *lineErrs) {
	o, ok := v.(map[string]any)
	if !ok {
		errs.add(n, f, "must be an object {%s} or {path} (a data binding)", literal)
		return
	}
	if len(o) == 0 {
		errs.add(n, f, "needs %s or path", literal)
		return
	}
	for k, x := range o {
		switch k {
		case "path":
			if s, ok := x.(string); !ok || s == "" {
				errs.add(n, f+".path", "must be a non-empty string such as \"/user/name\"")
			}
		case literal:
			checkLiteral(n, f+"."+k, k, x, enum, errs)
		default:
			errs.add(n, f+"."+k, "unknown property; use %s or path", literal)
		}
	}
}

func checkLiteral(n int, f, kind string, x any, enum []string, errs *lineErrs) {
	switch kind {
	case "literalString":
		s, ok := x.(string)
		if !ok {
			errs.add(n, f, "must be a string")
		} else if enum != nil && !inList(enum, s) {
			errs.add(n, f, "must be one of %s, got %q", strings.Join(enum, ", "), s)
		} else if len(s) > maxStringField {
			errs.add(n, f, "is longer than %d bytes", maxStringField)
		}
	case "literalBoolean":
		if _, ok := x.(bool); !ok {
			errs.add(n, f, "must be true or false")
		}
	case "literalNumber":
		if _, ok := x.(json.Number); !ok {
			errs.add(n, f, "must be a number")
		}
	case "literalArray":
		list, ok := x.([]any)
		if !ok {
			errs.add(n, f, "must be an array of strings")
			return
		}
		for _, it := range list {
			if _, ok := it.(string); !ok {
				errs.add(n, f, "must be an array of strings")
				return
			}
		}
	}
}

func checkChildren(n int, f string, v any, errs *lineErrs) []ComponentRef {
	o, ok := v.(map[string]any)
	if !ok || len(o) != 1 {
		errs.add(n, f, "must be an object with exactly one of explicitList ([ids]) or template ({componentId, dataBinding})")
		return nil
	}
	var refs []ComponentRef
	if el, ok := o["explicitList"]; ok {
		list, ok := el.([]any)
		if !ok {
			errs.add(n, f+".explicitList", "must be an array of component ids")
			return nil
		}
		for i, it := range list {
			itf := fmt.Sprintf("%s.explicitList[%d]", f, i)
			if id := reqString(n, itf, it, errs); id != "" {
				refs = append(refs, ComponentRef{Field: itf, ID: id})
			}
		}
		return refs
	}
	t, ok := o["template"].(map[string]any)
	if !ok {
		errs.add(n, f, "must be an object with exactly one of explicitList or template")
		return nil
	}
	checkKeys(n, f+".template", t, errs, "componentId", "dataBinding")
	if id := reqString(n, f+".template.componentId", t["componentId"], errs); id != "" {
		refs = append(refs, ComponentRef{Field: f + ".template.componentId", ID: id})
	}
	if s, ok := t["dataBinding"].(string); !ok || s == "" {
		errs.add(n, f+".template.dataBinding", "is required: the data-model path of the map to repeat over, e.g. \"/items\"")
	}
	return refs
}

func checkAction(n int, f string, v any, errs *lineErrs) {
	o, ok := v.(map[string]any)
	if !ok {
		errs.add(n, f, "must be an object {name, context?}")
		return
	}
	checkKeys(n, f, o, errs, "name", "context")
	reqString(n, f+".name", o["name"], errs)
	c, ok := o["context"]
	if !ok {
		return
	}
	list, ok := c.([]any)
	if !ok {
		errs.add(n, f+".context", "must be an array of {key, value}")
		return
	}
	for i, it := range list {
		itf := fmt.Sprintf("%s.context[%d]", f, i)
		io, ok := it.(map[string]any)
		if !ok {
			errs.add(n, itf, "must be an object {key, value}")
			continue
		}
		checkKeys(n, itf, io, errs, "key", "value")
		reqString(n, itf+".key", io["key"], errs)
		val, ok := io["value"].(map[string]any)
		if !ok || len(val) == 0 {
			errs.add(n, itf+".value", "is required: {path} or {literalString|literalNumber|literalBoolean}")
			continue
		}
		for k, x := range val {
			switch k {
			case "path":
				if s, ok := x.(string); !ok || s == "" {
					errs.add(n, itf+".value.path", "must be a non-empty string")
				}
			case "literalString", "literalNumber", "literalBoolean":
				checkLiteral(n, itf+".value."+k, k, x, nil, errs)
			default:
				errs.add(n, itf+".value."+k, "unknown property; use path, literalString, literalNumber or literalBoolean")
			}
		}
	}
}
