package canvas

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// The schemas of the commands, generated from Verbs and their args types
// (verbs.go): openapi.yaml holds them between VerbSchemasBegin and
// VerbSchemasEnd under components.schemas (CommandType, CommandEnvelope and
// BatchCommand as a oneOf discriminated by type, one <Verb>Command and one
// args schema per verb); a test in package api checks the file holds
// exactly VerbSchemasYAML and rewrites it with -update-verb-schemas.
// ArgsJSONSchema gives the same args as a standalone JSON Schema (draft
// 2020-12) for the agent's catalog and the MCP tools.

// Markers around the generated command schemas in openapi.yaml.
const (
	VerbSchemasBegin = "    # ---- BEGIN command schemas: generated from canvas/verbs.go (go test ./api -run TestOpenAPIVerbSchemas -update-verb-schemas)\n"
	VerbSchemasEnd   = "    # ---- END command schemas\n"
)

// namedArgTypes are the args types written as named schemas.
var namedArgTypes = map[reflect.Type]string{
	reflect.TypeOf(Transform{}): "Transform",
	reflect.TypeOf(IDList{}):    "IDList",
}

// VerbSchemasYAML returns the generated command schemas as openapi.yaml
// holds them under components.schemas: markers included, indented four
// spaces. has reports whether openapi.yaml has a named schema a field
// refers to (NodeProps, EdgeProps); a field whose schema it lacks is
// written as an open object.
func VerbSchemasYAML(has func(name string) bool) string {
	var b strings.Builder
	b.WriteString(VerbSchemasBegin)
	for _, s := range verbSchemas(has) {
		b.WriteString("    " + s.k + ":\n")
		writeYAMLObject(&b, s.v.(yobj), 6)
	}
	b.WriteString(VerbSchemasEnd)
	return b.String()
}

// verbSchemas returns the named command schemas, in the order openapi.yaml lists them.
func verbSchemas(has func(string) bool) []ykv {
	verbs := Verbs()
	var types []string
	var commands []any
	mapping := yobj{}
	for _, v := range verbs {
		types = append(types, v.Type)
		commands = append(commands, ref(v.CommandSchemaName()))
		mapping = append(mapping, ykv{v.Type, "#/components/schemas/" + v.CommandSchemaName()})
	}
	discriminator := yobj{{"propertyName", "type"}, {"mapping", mapping}}
	out := []ykv{
		{"CommandType", yobj{
			{"type", "string"},
			{"description", "The command types: API-surface verbs, TLDraw-native verbs, document verbs and history verbs. The args of each are the schema its command schema names (e.g. `create_node` → `CreateNodeCommand` → `CreateNodeArgs`)."},
			{"enum", types},
		}},
		{"CommandEnvelope", yobj{
			{"type", "object"},
			{"description", "A command: `type` names the verb and `args` its arguments, whose schema depends on `type` (one command schema per type, chosen by `type`). Top-level fields other than these are rejected (400). An unknown `type` is a 422 naming `type`; args that do not fit the type are a 422 naming the field."},
			{"required", []string{"base_rev"}},
			{"oneOf", commands},
			{"discriminator", discriminator},
		}},
		{"BatchCommand", yobj{
			{"description", "A command inside a batch: a `CommandEnvelope` whose own `base_rev` is ignored (the batch's applies)."},
			{"oneOf", commands},
			{"discriminator", discriminator},
		}},
	}
	for _, v := range verbs {
		out = append(out, ykv{v.CommandSchemaName(), yobj{
			{"type", "object"},
			{"description", "`" + v.Type + "`: " + v.Summary},
			{"required", []string{"type"}},
			{"properties", yobj{
				{"id", ref("CommandID")},
				{"type", yobj{{"allOf", []any{ref("CommandType")}}, {"enum", []string{v.Type}}}},
				{"base_rev", ref("BaseRev")},
				{"idempotency_key", ref("IdempotencyKey")},
				{"strict", ref("Strict")},
				{"args", ref(v.Schema)},
			}},
			{"additionalProperties", false},
		}})
	}
	out = append(out,
		ykv{"CommandID", yobj{{"type", "string"}, {"maxLength", MaxIdempotencyKeyLen}, {"description", "The command id (`cmd_id` of the commit); minted when absent."}}},
		ykv{"BaseRev", yobj{{"type", "integer"}, {"format", "int64"}, {"minimum", 0}, {"description", "The `head_rev` the client last read (required, but for a command inside a batch)."}}},
		ykv{"IdempotencyKey", yobj{{"type", "string"}, {"maxLength", MaxIdempotencyKeyLen}, {"description", "Replays of the same key on the same canvas return the stored answer (kept ≥ 24 h)."}}},
		ykv{"Strict", yobj{{"type", "boolean"}, {"description", "Any stale `base_rev` is a 409, even without overlapping changes. Default: false."}}},
		ykv{"Transform", structSchema(reflect.TypeOf(Transform{}), nil, has, false)},
		ykv{"IDList", typeSchema(reflect.TypeOf([]string{}), reflect.StructTag(`minlen:"1"`), has, false)})
	seen := map[string]bool{}
	for _, v := range verbs {
		if seen[v.Schema] {
			continue
		}
		seen[v.Schema] = true
		out = append(out, ykv{v.Schema, argsSchema(v, has)})
	}
	return out
}

// argsSchema returns the OpenAPI schema of a verb's args.
func argsSchema(v VerbDef, has func(string) bool) yobj {
	if len(v.Forms) == 0 {
		s := structSchema(v.Args, nil, has, false)
		if v.Description != "" {
			s = append(yobj{s[0], {"description", v.Description}}, s[1:]...)
		}
		return s
	}
	var forms []any
	for _, f := range v.Forms {
		forms = append(forms, structSchema(v.Args, &f, has, false))
	}
	return yobj{{"description", v.Description}, {"oneOf", forms}}
}

// structSchema returns the schema of an args struct: its fields (only those
// of form, when given, required as form says) as properties, required those
// without omitempty, nothing else allowed.
func structSchema(t reflect.Type, form *ArgsForm, has func(string) bool, inline bool) yobj {
	var props yobj
	var required []string
	in := func(list []string, name string) bool {
		for _, n := range list {
			if n == name {
				return true
			}
		}
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, optional := jsonTag(f)
		if name == "" {
			continue
		}
		if form != nil {
			if !in(form.Required, name) && !in(form.Optional, name) {
				continue
			}
			optional = !in(form.Required, name)
		}
		props = append(props, ykv{name, fieldSchema(f, has, inline)})
		if !optional {
			required = append(required, name)
		}
	}
	s := yobj{{"type", "object"}}
	if len(required) > 0 {
		s = append(s, ykv{"required", required})
	}
	if len(props) > 0 {
		s = append(s, ykv{"properties", props})
	}
	return append(s, ykv{"additionalProperties", false})
}

// jsonTag returns a field's JSON name ("" when it has none) and whether it is optional.
func jsonTag(f reflect.StructField) (name string, optional bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(","+opts+",", ",omitempty,")
}

// fieldDesc is a field's description, with its default value: schemas
// carry no "default", as generated clients would make such an argument
// required and the MCP SDK would write it into the arguments.
func fieldDesc(f reflect.StructField) string {
	d := f.Tag.Get("desc")
	if def := f.Tag.Get("default"); def != "" {
		if d != "" {
			d += " "
		}
		d += "Default: " + def + "."
	}
	return d
}

// fieldSchema returns the schema of one field, from its type and tags.
func fieldSchema(f reflect.StructField, has func(string) bool, inline bool) yobj {
	if r := f.Tag.Get("ref"); r != "" {
		if has != nil && has(r) && !inline {
			return withDesc(ref(r), fieldDesc(f))
		}
		return withDesc(yobj{{"type", "object"}, {"additionalProperties", true}}, fieldDesc(f))
	}
	return withDesc(typeSchema(f.Type, f.Tag, has, inline), fieldDesc(f))
}

// typeSchema returns the schema of a value of type t with a field's tags.
func typeSchema(t reflect.Type, tag reflect.StructTag, has func(string) bool, inline bool) yobj {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := namedArgTypes[t]; ok && !inline {
		return ref(name)
	}
	num := func(s yobj, key string) yobj {
		if v := tag.Get(key); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				panic(fmt.Sprintf("canvas: tag %s:%q is not a number", key, v))
			}
			return append(s, ykv{map[string]string{"min": "minimum", "max": "maximum", "xmin": "minimum"}[key], f})
		}
		return s
	}
	length := func(s yobj, minKey, maxKey string) yobj {
		for _, k := range [][2]string{{"minlen", minKey}, {"maxlen", maxKey}} {
			if v := tag.Get(k[0]); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					panic(fmt.Sprintf("canvas: tag %s:%q is not a number", k[0], v))
				}
				s = append(s, ykv{k[1], n})
			}
		}
		return s
	}
	var s yobj
	switch t.Kind() {
	case reflect.String:
		s = yobj{{"type", "string"}}
		if e := tag.Get("enum"); e != "" {
			values, ok := EnumValues(e)
			if !ok {
				panic("canvas: no enum " + e)
			}
			s = append(s, ykv{"enum", values})
		}
		s = length(s, "minLength", "maxLength")
	case reflect.Float64:
		s = num(num(yobj{{"type", "number"}}, "min"), "max")
		if tag.Get("xmin") != "" {
			s = append(num(s, "xmin"), ykv{"exclusiveMinimum", true})
		}
	case reflect.Int, reflect.Int64:
		s = yobj{{"type", "integer"}}
		if t.Kind() == reflect.Int64 {
			s = append(s, ykv{"format", "int64"})
		}
		s = num(num(s, "min"), "max")
	case reflect.Bool:
		s = yobj{{"type", "boolean"}}
	case reflect.Slice:
		// min and max are the items'; minlen and maxlen the list's.
		item := reflect.StructTag(fmt.Sprintf(`min:%q max:%q`, tag.Get("min"), tag.Get("max")))
		if tag.Get("min") == "" && tag.Get("max") == "" {
			item = ""
		}
		s = length(yobj{{"type", "array"}}, "minItems", "maxItems")
		s = append(s, ykv{"items", typeSchema(t.Elem(), item, has, inline)})
	case reflect.Struct:
		return structSchema(t, nil, has, inline)
	case reflect.Map:
		return yobj{{"type", "object"}, {"additionalProperties", true}}
	case reflect.Interface: // any JSON value
		s = yobj{}
	default:
		panic("canvas: no schema for a field of type " + t.String())
	}
	return s
}

// JSONSchemaOptions say how ArgsJSONSchema and ObjectJSONSchema write what
// openapi.yaml writes as references.
type JSONSchemaOptions struct {
	// Ref returns the schema of a field tagged ref:"<name>" (NodeProps,
	// EdgeProps); nil (or a nil answer): an open object.
	Ref func(name string) map[string]any
	// Enum returns the values of an enum tag this package does not define.
	Enum func(name string) []string
	// Open lists struct types that allow properties besides their fields.
	Open []reflect.Type
}

// ArgsJSONSchema returns the args of a command type as a standalone JSON
// Schema (draft 2020-12): named schemas written in place, each form of a
// verb with forms a branch of oneOf. ok is false for an unknown type.
func ArgsJSONSchema(typ string, o JSONSchemaOptions) (map[string]any, bool) {
	v, ok := VerbByType(typ)
	if !ok {
		return nil, false
	}
	if len(v.Forms) == 0 {
		s := ObjectJSONSchema(v.Args, o)
		if v.Description != "" {
			s["description"] = v.Description
		}
		return s, true
	}
	var forms []any
	for _, f := range v.Forms {
		forms = append(forms, jsonSchema(v.Args, &f, o))
	}
	return map[string]any{"type": "object", "description": v.Description, "oneOf": forms}, true
}

// ObjectJSONSchema returns the JSON Schema (draft 2020-12) of a struct type
// whose fields carry the tags of verbs.go.
func ObjectJSONSchema(t reflect.Type, o JSONSchemaOptions) map[string]any {
	return jsonSchema(t, nil, o)
}

func jsonSchema(t reflect.Type, form *ArgsForm, o JSONSchemaOptions) map[string]any {
	out := map[string]any{"type": "object", "additionalProperties": false}
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, optional := jsonTag(f)
		if name == "" {
			continue
		}
		if form != nil {
			inForm := false
			for _, n := range form.Required {
				if n == name {
					inForm, optional = true, false
				}
			}
			for _, n := range form.Optional {
				if n == name {
					inForm, optional = true, true
				}
			}
			if !inForm {
				continue
			}
		}
		props[name] = fieldJSONSchema(f, o)
		if !optional {
			required = append(required, name)
		}
	}
	out["properties"] = props
	if len(required) > 0 {
		out["required"] = required
	}
	for _, open := range o.Open {
		if open == t {
			out["additionalProperties"] = true
		}
	}
	return out
}

func fieldJSONSchema(f reflect.StructField, o JSONSchemaOptions) map[string]any {
	var s map[string]any
	if r := f.Tag.Get("ref"); r != "" {
		if o.Ref != nil {
			s = o.Ref(r)
		}
		if s == nil {
			s = map[string]any{"type": "object", "additionalProperties": true}
		}
	} else {
		s = typeJSONSchema(f.Type, f.Tag, o)
	}
	if d := fieldDesc(f); d != "" {
		s["description"] = d
	}
	return s
}

func typeJSONSchema(t reflect.Type, tag reflect.StructTag, o JSONSchemaOptions) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		return jsonSchema(t, nil, o)
	}
	if t == reflect.TypeOf(IDList{}) {
		tag = `minlen:"1"`
	}
	if t.Kind() == reflect.Slice {
		// the list's own tags, then its items' (min, max) with the same recursion
		s := yobjMap(typeSchema(reflect.TypeOf([]string{}), reflect.StructTag(fmt.Sprintf(`minlen:%q maxlen:%q`, tag.Get("minlen"), tag.Get("maxlen"))), nil, true))
		for _, k := range []string{"minItems", "maxItems"} {
			if s[k] == 0 && tag.Get(map[string]string{"minItems": "minlen", "maxItems": "maxlen"}[k]) == "" {
				delete(s, k)
			}
		}
		var item reflect.StructTag
		if tag.Get("min") != "" || tag.Get("max") != "" {
			item = reflect.StructTag(fmt.Sprintf(`min:%q max:%q`, tag.Get("min"), tag.Get("max")))
		}
		s["items"] = typeJSONSchema(t.Elem(), item, o)
		return s
	}
	if e := tag.Get("enum"); e != "" && t.Kind() == reflect.String {
		if _, ok := EnumValues(e); !ok {
			if o.Enum == nil || o.Enum(e) == nil {
				panic("canvas: no enum " + e)
			}
			s := yobjMap(typeSchema(t, reflect.StructTag(strings.Replace(string(tag), `enum:"`+e+`"`, "", 1)), nil, true))
			s["enum"] = o.Enum(e)
			return s
		}
	}
	return yobjMap(typeSchema(t, tag, nil, true))
}

// yobjMap converts an OpenAPI 3.0 schema to a JSON Schema map: an
// exclusiveMinimum flag becomes the bound itself (draft 2020-12).
func yobjMap(o yobj) map[string]any {
	m := make(map[string]any, len(o))
	for _, kv := range o {
		switch v := kv.v.(type) {
		case yobj:
			m[kv.k] = yobjMap(v)
		case []any:
			l := make([]any, len(v))
			for i, x := range v {
				if y, ok := x.(yobj); ok {
					l[i] = yobjMap(y)
				} else {
					l[i] = x
				}
			}
			m[kv.k] = l
		default:
			m[kv.k] = v
		}
	}
	if m["exclusiveMinimum"] == true {
		m["exclusiveMinimum"] = m["minimum"]
		delete(m, "minimum")
	}
	return m
}
