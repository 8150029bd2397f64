package agent

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Vocabulary normalization: verb spellings, shape kinds, TLDraw enum aliases
// (including the brand palette of the design). Pure functions over constant
// tables built per call.

// normVerb maps a model's verb spelling to a catalog verb ("" if unknown).
func normVerb(name string) string {
	n := snake(strings.TrimSpace(name))
	n = strings.NewReplacer("-", "_", " ", "_").Replace(n)
	if IsVerb(n) {
		return n
	}
	switch n {
	case "create", "add_shape", "create_shapes", "draw_shape", "add", "new_shape", "place_shape":
		return "create_shape"
	case "update", "edit_shape", "modify_shape", "update_shapes", "style_shape", "set_props":
		return "update_shape"
	case "delete", "remove", "remove_shape", "delete_shapes", "remove_shapes":
		return "delete_shape"
	case "move_shape", "move_shapes", "translate":
		return "move"
	case "resize_shape", "scale":
		return "resize"
	case "rotate_shape":
		return "rotate"
	case "group_shapes":
		return "group"
	case "ungroup_shapes":
		return "ungroup"
	case "align_shapes":
		return "align"
	case "distribute_shapes":
		return "distribute"
	case "stack_shapes":
		return "stack"
	case "reorder_shapes", "z_order", "bring_to_front", "send_to_back":
		return "reorder"
	case "viewport", "set_camera", "zoom_to", "pan":
		return "set_viewport"
	case "message", "say", "chat", "note_to_user", "thought":
		return "think"
	case "add_todo", "todos":
		return "todo"
	case "detail", "followup", "follow_up", "more_detail":
		return "add_detail"
	case "preset", "apply_style", "brand_preset":
		return "apply_preset"
	}
	return ""
}

// snake converts camelCase to snake_case ("parentId" → "parent_id").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shapeKind maps a shape kind the model may say to a TLDraw type and, for geo
// shapes, a geo. ok is false for unknown (or half-spelled) kinds.
func shapeKind(kind string) (typ, geo string, ok bool) {
	k := strings.ToLower(strings.TrimSpace(kind))
	k = strings.NewReplacer("_", "-", " ", "-").Replace(k)
	switch k {
	case "geo", "note", "text", "draw", "line", "frame", "image", "embed":
		return k, "", true
	case "arrow", "connector", "link", "pointer", "edge":
		return "arrow", "", true // not a node kind: sanitizeCreate says to use connect
	case "box", "rect", "rectangle", "square", "block", "card", "panel", "button", "container", "shape", "supporting-block", "background":
		return "geo", "rectangle", true
	case "ellipse", "circle", "oval", "dot", "bubble":
		return "geo", "ellipse", true
	case "triangle", "diamond", "pentagon", "hexagon", "octagon", "star", "rhombus", "trapezoid", "heart", "cloud", "x-box", "check-box":
		return "geo", k, true
	case "sticky", "sticky-note", "stickynote", "postit", "post-it", "callout", "comment":
		return "note", "", true
	case "headline", "heading", "title", "label", "caption", "paragraph", "body", "copy", "subtitle", "textbox", "text-box", "hero":
		return "text", "", true
	case "divider", "rule", "separator", "hr", "vertical-divider", "horizontal-divider", "polyline":
		return "line", "", true
	case "section", "artboard", "board", "region":
		return "frame", "", true
	case "pen", "stroke", "freehand", "scribble", "sketch", "drawing", "path":
		return "draw", "", true
	case "picture", "photo", "img":
		return "image", "", true
	}
	return "", "", false
}

// normEnum coerces a value to one of an enum set's members (with aliases);
// ok is false when it cannot (a partial or unknown value).
func normEnum(set string, v any) (string, bool) {
	s, isStr := v.(string)
	if !isStr {
		return "", false
	}
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.NewReplacer("_", "-", "  ", " ").Replace(k)
	if k == "" {
		return "", false
	}
	if inEnum(enumSet(set), k) {
		return k, true
	}
	if set == "preset" {
		for _, p := range enumPreset {
			if strings.EqualFold(p, k) {
				return p, true
			}
		}
	}
	alias := map[string]map[string]string{
		"color": {
			"brutalist-orange": "orange", "brutalist orange": "orange", "burnt-orange": "orange", "burnt orange": "orange",
			"amber": "orange", "rust": "orange", "tangerine": "orange",
			"deep-orange": "red", "deep orange": "red", "crimson": "red", "scarlet": "red", "maroon": "red",
			"charcoal": "black", "ink": "black", "jet": "black", "dark": "black", "onyx": "black",
			"gray": "grey", "concrete": "grey", "slate": "grey", "silver": "grey", "stone": "grey",
			"light-gray": "grey", "light-grey": "grey", "dark-grey": "grey", "dark-gray": "grey",
			"purple": "violet", "lavender": "light-violet", "light-purple": "light-violet", "lilac": "light-violet",
			"navy": "blue", "cobalt": "blue", "sky": "light-blue", "cyan": "light-blue", "teal": "light-blue", "sky-blue": "light-blue",
			"lime": "light-green", "mint": "light-green", "emerald": "green", "forest": "green",
			"pink": "light-red", "salmon": "light-red", "rose": "light-red", "coral": "light-red",
			"gold": "yellow", "mustard": "yellow", "cream": "white", "off-white": "white", "paper": "white", "bone": "white",
		},
		"fill": {"filled": "solid", "full": "solid", "opaque": "solid", "transparent": "none", "hollow": "none", "empty": "none", "outline": "none",
			"semi-transparent": "semi", "translucent": "semi", "half": "semi", "hatch": "pattern", "hatched": "pattern", "striped": "pattern"},
		"dash": {"dash": "dashed", "dot": "dotted", "sketch": "draw", "hand": "draw", "handdrawn": "draw", "hand-drawn": "draw", "rough": "draw", "line": "solid", "plain": "solid"},
		"size": {"small": "s", "sm": "s", "medium": "m", "md": "m", "normal": "m", "large": "l", "lg": "l", "big": "l",
			"xlarge": "xl", "x-large": "xl", "extra-large": "xl", "huge": "xl", "giant": "xl", "jumbo": "xl"},
		"font": {"handwritten": "draw", "hand": "draw", "sans-serif": "sans", "helvetica": "sans", "inter": "sans", "arial": "sans", "grotesk": "sans",
			"monospace": "mono", "code": "mono", "courier": "mono", "times": "serif", "georgia": "serif"},
		"align":     {"left": "start", "top": "start", "center": "middle", "centre": "middle", "right": "end", "bottom": "end", "justify": "start"},
		"geo":       {"rect": "rectangle", "box": "rectangle", "square": "rectangle", "circle": "ellipse", "checkbox": "check-box", "xbox": "x-box"},
		"alignment": {"center": "center-horizontal", "centre": "center-horizontal", "middle": "center-vertical", "horizontal-center": "center-horizontal", "vertical-center": "center-vertical"},
		"direction": {"row": "horizontal", "x": "horizontal", "column": "vertical", "col": "vertical", "y": "vertical"},
		"reorder": {"front": "bring_to_front", "back": "send_to_back", "forward": "bring_forward", "backward": "send_backward",
			"bring-to-front": "bring_to_front", "send-to-back": "send_to_back", "bring-forward": "bring_forward", "send-backward": "send_backward"},
		"preset": {"headline": "Hero", "title": "Hero", "hero": "Hero", "highlight": "Callout", "sticky": "Callout", "callout": "Callout",
			"muted": "Quiet", "subtle": "Quiet", "caption": "Quiet", "quiet": "Quiet", "wireframe": "Wire", "outline": "Wire", "wire": "Wire",
			"tag": "Label", "label": "Label"},
		"todo_status": {"complete": "done", "completed": "done", "finished": "done", "todo": "open", "pending": "open", "skip": "skipped", "cancelled": "skipped", "canceled": "skipped"},
	}
	if m, ok := alias[set]; ok {
		if v, ok := m[k]; ok {
			return v, true
		}
		if v, ok := m[strings.ReplaceAll(k, " ", "-")]; ok {
			return v, true
		}
		if v, ok := m[strings.ReplaceAll(k, "-", " ")]; ok {
			return v, true
		}
	}
	if set == "reorder" {
		if v := strings.ReplaceAll(k, "-", "_"); inEnum(enumSet("reorder"), v) {
			return v, true
		}
	}
	return "", false
}

// toNumber coerces a JSON value to a finite float64 clamped into [lo, hi].
// ok is false for values that are not numbers (or numeric strings) or NaN.
func toNumber(v any, lo, hi float64) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case float64:
		f = t
	case int:
		f = float64(t)
	case int64:
		f = float64(t)
	case string:
		s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "px"))
		x, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return 0, false
		}
		f = x
	default:
		return 0, false
	}
	if math.IsNaN(f) {
		f = 0 // NaN guard: a present-but-NaN coordinate becomes 0
	}
	if f < lo {
		f = lo
	}
	if f > hi {
		f = hi
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
