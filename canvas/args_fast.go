package canvas

import (
	"encoding/json"
	"strconv"
)

// DecodeCreateNodeArgsFast decodes create_node args, the hottest verb's,
// without reflection when they have the common shape: a valid JSON object
// whose members are CreateNodeArgs' fields spelled as their json names, each
// at most once, with plain strings (no escape, ASCII only), a transform
// object of numbers and an object of props (decoded as DecodeStrict decodes
// them: numbers stay json.Number). It reports false for anything else,
// which DecodeStrict then decodes (or rejects) the general way; where it
// reports true the result is what that would have decoded.
func DecodeCreateNodeArgsFast(data []byte) (CreateNodeArgs, bool) {
	var a CreateNodeArgs
	if !json.Valid(data) {
		return a, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return a, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return a, true
	}
	var seen uint8
	for {
		key, end, ok := plainString(data, i)
		if !ok {
			return a, false
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		var bit uint8
		switch string(key) {
		case "id", "name", "type", "parent_id":
			v, end, ok := plainString(data, i)
			if !ok {
				return a, false
			}
			switch string(key) {
			case "id":
				a.ID, bit = string(v), 1
			case "name":
				a.Name, bit = string(v), 2
			case "type":
				a.Type, bit = string(v), 4
			default:
				a.ParentID, bit = string(v), 8
			}
			i = end
		case "transform":
			t, end, ok := transformFast(data, i)
			if !ok {
				return a, false
			}
			a.Transform, bit, i = t, 16, end
		case "props":
			if data[i] != '{' {
				return a, false
			}
			end := skipValue(data, i)
			if err := DecodeStrict(data[i:end], &a.Props); err != nil {
				return a, false
			}
			bit, i = 32, end
		default:
			return a, false
		}
		if seen&bit != 0 {
			return a, false
		}
		seen |= bit
		i = skipSpace(data, i)
		if data[i] == '}' {
			return a, skipSpace(data, i+1) == len(data)
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

// transformFast decodes a Transform object of numbers at data[i] (valid
// JSON), returning the offset past it.
func transformFast(data []byte, i int) (*Transform, int, bool) {
	if data[i] != '{' {
		return nil, 0, false
	}
	t := &Transform{}
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		return t, i + 1, true
	}
	for {
		key, end, ok := plainString(data, i)
		if !ok {
			return nil, 0, false
		}
		i = skipSpace(data, skipSpace(data, end)+1)
		var dst **float64
		switch string(key) {
		case "x":
			dst = &t.X
		case "y":
			dst = &t.Y
		case "w":
			dst = &t.W
		case "h":
			dst = &t.H
		case "rotation":
			dst = &t.Rotation
		default:
			return nil, 0, false
		}
		if *dst != nil {
			return nil, 0, false // twice: encoding/json keeps the last
		}
		j := i
		for j < len(data) {
			c := data[j]
			if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				j++
				continue
			}
			break
		}
		if j == i || data[i] == '+' {
			return nil, 0, false // not a number (null, a string, ...)
		}
		f, err := strconv.ParseFloat(string(data[i:j]), 64)
		if err != nil {
			return nil, 0, false
		}
		*dst = &f
		i = skipSpace(data, j)
		if data[i] == '}' {
			return t, i + 1, true
		}
		i = skipSpace(data, i+1)
	}
}
