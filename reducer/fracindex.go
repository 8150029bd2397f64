package reducer

import (
	"fmt"

	"github.com/canvasd/canvasd/canvas"
)

// Fractional indexing (the scheme of tldraw and rocicorp/fractional-indexing):
// a key is an integer part (a head letter giving its length, then base-62
// digits) followed by an optional fraction of base-62 digits that never ends
// in '0'. Keys compare as plain strings, and there is always a key between
// any two distinct valid keys, so reordering rewrites only the moved nodes.

const digits62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// smallestInteger is the lowest integer part; it is not a valid key by itself.
const smallestInteger = "A00000000000000000000000000"

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 36
	}
	return -1
}

// integerLength returns the length of the integer part that starts with head.
func integerLength(head byte) (int, bool) {
	switch {
	case head >= 'a' && head <= 'z':
		return int(head-'a') + 2, true
	case head >= 'A' && head <= 'Z':
		return int('Z'-head) + 2, true
	}
	return 0, false
}

// ValidIndexKey reports whether k is a valid fractional-index key.
func ValidIndexKey(k string) bool {
	if k == "" || k == smallestInteger {
		return false
	}
	n, ok := integerLength(k[0])
	if !ok || n > len(k) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if digitValue(k[i]) < 0 {
			return false
		}
	}
	return len(k) == n || k[len(k)-1] != '0'
}

// midpoint returns a digit string strictly between fractions a and b
// (b == "" with hasB false means "no upper bound").
func midpoint(a, b string, hasB bool) string {
	if hasB {
		n := 0
		for n < len(b) {
			ac := byte('0')
			if n < len(a) {
				ac = a[n]
			}
			if ac != b[n] {
				break
			}
			n++
		}
		if n > 0 {
			rest := ""
			if n < len(a) {
				rest = a[n:]
			}
			return b[:n] + midpoint(rest, b[n:], true)
		}
	}
	da := 0
	if a != "" {
		da = digitValue(a[0])
	}
	db := len(digits62)
	if hasB {
		db = digitValue(b[0])
	}
	if db-da > 1 {
		return string(digits62[(da+db+1)/2])
	}
	if hasB && len(b) > 1 {
		return b[:1]
	}
	rest := ""
	if a != "" {
		rest = a[1:]
	}
	return string(digits62[da]) + midpoint(rest, "", false)
}

// incrementInteger returns the next integer part, or ok=false past the largest.
func incrementInteger(x string) (string, bool) {
	head, digs := x[0], []byte(x[1:])
	carry := true
	for i := len(digs) - 1; carry && i >= 0; i-- {
		d := digitValue(digs[i]) + 1
		if d == len(digits62) {
			digs[i] = '0'
		} else {
			digs[i] = digits62[d]
			carry = false
		}
	}
	if !carry {
		return string(head) + string(digs), true
	}
	switch head {
	case 'Z':
		return "a0", true
	case 'z':
		return "", false
	}
	h := head + 1
	if h > 'a' {
		digs = append(digs, '0')
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(h) + string(digs), true
}

// decrementInteger returns the previous integer part, or ok=false below the smallest.
func decrementInteger(x string) (string, bool) {
	head, digs := x[0], []byte(x[1:])
	borrow := true
	for i := len(digs) - 1; borrow && i >= 0; i-- {
		d := digitValue(digs[i]) - 1
		if d == -1 {
			digs[i] = 'z'
		} else {
			digs[i] = digits62[d]
			borrow = false
		}
	}
	if !borrow {
		return string(head) + string(digs), true
	}
	switch head {
	case 'a':
		return "Zz", true
	case 'A':
		return "", false
	}
	h := head - 1
	if h < 'Z' {
		digs = append(digs, 'z')
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(h) + string(digs), true
}

func splitKey(k string) (integer, fraction string) {
	n, _ := integerLength(k[0])
	return k[:n], k[n:]
}

// KeyBetween returns a key strictly between a and b; "" means unbounded on
// that side. Both must be valid keys with a < b; otherwise the error wraps
// canvas.ErrUnprocessable.
func KeyBetween(a, b string) (string, error) {
	if a != "" && !ValidIndexKey(a) {
		return "", fmt.Errorf("invalid index key %q: %w", a, canvas.ErrUnprocessable)
	}
	if b != "" && !ValidIndexKey(b) {
		return "", fmt.Errorf("invalid index key %q: %w", b, canvas.ErrUnprocessable)
	}
	if a != "" && b != "" && a >= b {
		return "", fmt.Errorf("index key %q is not below %q: %w", a, b, canvas.ErrUnprocessable)
	}
	switch {
	case a == "" && b == "":
		return "a0", nil
	case a == "":
		ib, fb := splitKey(b)
		if ib == smallestInteger {
			return ib + midpoint("", fb, true), nil
		}
		if ib < b {
			return ib, nil
		}
		k, ok := decrementInteger(ib)
		if !ok {
			return "", fmt.Errorf("no index key below %q: %w", b, canvas.ErrUnprocessable)
		}
		return k, nil
	case b == "":
		ia, fa := splitKey(a)
		if k, ok := incrementInteger(ia); ok {
			return k, nil
		}
		return ia + midpoint(fa, "", false), nil
	}
	ia, fa := splitKey(a)
	ib, fb := splitKey(b)
	if ia == ib {
		return ia + midpoint(fa, fb, true), nil
	}
	k, ok := incrementInteger(ia)
	if !ok {
		return "", fmt.Errorf("no index key above %q: %w", a, canvas.ErrUnprocessable)
	}
	if k < b {
		return k, nil
	}
	return ia + midpoint(fa, "", false), nil
}

// KeysBetween returns n ascending keys strictly between a and b ("" =
// unbounded), spread so that later inserts stay short.
func KeysBetween(a, b string, n int) ([]string, error) {
	out := make([]string, 0, n)
	return keysBetween(out, a, b, n)
}

func keysBetween(out []string, a, b string, n int) ([]string, error) {
	switch {
	case n <= 0:
		return out, nil
	case n == 1:
		k, err := KeyBetween(a, b)
		if err != nil {
			return out, err
		}
		return append(out, k), nil
	case b == "":
		c := a
		for i := 0; i < n; i++ {
			k, err := KeyBetween(c, b)
			if err != nil {
				return out, err
			}
			out = append(out, k)
			c = k
		}
		return out, nil
	case a == "":
		keys := make([]string, n)
		c := b
		for i := n - 1; i >= 0; i-- {
			k, err := KeyBetween(a, c)
			if err != nil {
				return out, err
			}
			keys[i] = k
			c = k
		}
		return append(out, keys...), nil
	}
	mid := n / 2
	c, err := KeyBetween(a, b)
	if err != nil {
		return out, err
	}
	if out, err = keysBetween(out, a, c, mid); err != nil {
		return out, err
	}
	out = append(out, c)
	return keysBetween(out, c, b, n-mid-1)
}

// integerKey returns the r-th integer key after "a0" (r ≥ 0): "a0", "a1", ...,
// "az", "b00", ... It is what incrementInteger reaches from "a0" in r steps.
func integerKey(r int64) string {
	for l := 1; ; l++ {
		// 62^l values have l digits; past 10 digits int64 cannot overflow a level.
		if l >= 11 {
			return string(byte('a'+l-1)) + base62(r, l)
		}
		size := int64(1)
		for i := 0; i < l; i++ {
			size *= 62
		}
		if r < size {
			return string(byte('a'+l-1)) + base62(r, l)
		}
		r -= size
	}
}

func base62(v int64, width int) string {
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = digits62[v%62]
		v /= 62
	}
	return string(b)
}
