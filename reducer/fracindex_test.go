package reducer

import (
	"errors"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

func TestKeyBetween(t *testing.T) {
	const bad = "!"
	cases := []struct{ a, b, want string }{
		{"", "", "a0"},
		{"", "a0", "Zz"},
		{"", "Zz", "Zy"},
		{"a0", "", "a1"},
		{"a1", "", "a2"},
		{"a0", "a1", "a0V"},
		{"a1", "a2", "a1V"},
		{"a0V", "a1", "a0l"},
		{"Zz", "a0", "ZzV"},
		{"Zz", "a1", "a0"},
		{"", "Y00", "Xzzz"},
		{"bzz", "", "c000"},
		{"a0", "a0V", "a0G"},
		{"a0", "a0G", "a08"},
		{"b125", "b129", "b127"},
		{"a0", "a1V", "a1"},
		{"Zz", "a01", "a0"},
		{"", "a0V", "a0"},
		{"", "b999", "b99"},
		{"", "A00000000000000000000000000", bad},
		{"", "A000000000000000000000000001", "A000000000000000000000000000V"},
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzy", "", "zzzzzzzzzzzzzzzzzzzzzzzzzzz"},
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzz", "", "zzzzzzzzzzzzzzzzzzzzzzzzzzzV"},
		{"a00", "", bad},
		{"a00", "a1", bad},
		{"0", "1", bad},
		{"a1", "a0", bad},
		{"a1", "a1", bad},
	}
	for _, c := range cases {
		got, err := KeyBetween(c.a, c.b)
		if c.want == bad {
			if err == nil || !errors.Is(err, canvas.ErrUnprocessable) {
				t.Errorf("KeyBetween(%q, %q) = %q, %v; want an ErrUnprocessable error", c.a, c.b, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("KeyBetween(%q, %q) = %q, %v; want %q", c.a, c.b, got, err, c.want)
		}
	}
}

func checkBetween(t testing.TB, a, b, k string) {
	t.Helper()
	if !ValidIndexKey(k) || (a != "" && k <= a) || (b != "" && k >= b) {
		t.Fatalf("key %q is not a valid key strictly between %q and %q", k, a, b)
	}
}

// Inserting again and again at the same spot keeps every key valid and
// ordered; keys grow by about one digit per six inserts (log base 62/2).
func TestKeyBetweenLongSequences(t *testing.T) {
	const n = 3000
	// Always right after a fixed key (towards it).
	lo, hi := "a0", "a1"
	for i := 0; i < n; i++ {
		k, err := KeyBetween(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		checkBetween(t, lo, hi, k)
		hi = k
	}
	if len(hi) > n/5+4 {
		t.Errorf("after %d inserts at one spot the key is %d long", n, len(hi))
	}
	// Always right before a fixed key.
	lo, hi = "a0", "a1"
	for i := 0; i < n; i++ {
		k, err := KeyBetween(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		checkBetween(t, lo, hi, k)
		lo = k
	}
	if len(lo) > n/5+4 {
		t.Errorf("after %d inserts before one key the key is %d long", n, len(lo))
	}
	// Appending and prepending stay short.
	top, bottom := "a0", "a0"
	for i := 0; i < n; i++ {
		k, err := KeyBetween(top, "")
		if err != nil {
			t.Fatal(err)
		}
		checkBetween(t, top, "", k)
		top = k
		if k, err = KeyBetween("", bottom); err != nil {
			t.Fatal(err)
		}
		checkBetween(t, "", bottom, k)
		bottom = k
	}
	if len(top) > 4 || len(bottom) > 4 {
		t.Errorf("append/prepend keys grew: %q %q", top, bottom)
	}
	// Alternating sides of a shrinking interval.
	lo, hi = "a0", "a1"
	for i := 0; i < n; i++ {
		k, err := KeyBetween(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		checkBetween(t, lo, hi, k)
		if i%2 == 0 {
			lo = k
		} else {
			hi = k
		}
	}
}

func TestKeysBetween(t *testing.T) {
	for _, c := range []struct {
		a, b string
		n    int
	}{{"", "", 10}, {"a0", "", 7}, {"", "a0", 7}, {"a0", "a1", 100}, {"a0", "a0V", 1}, {"Zz", "a0", 33}} {
		keys, err := KeysBetween(c.a, c.b, c.n)
		if err != nil || len(keys) != c.n {
			t.Fatalf("KeysBetween(%q, %q, %d) = %v, %v", c.a, c.b, c.n, keys, err)
		}
		prev := c.a
		for _, k := range keys {
			checkBetween(t, prev, c.b, k)
			prev = k
		}
	}
}

func TestIntegerKey(t *testing.T) {
	k := "a0"
	for r := int64(0); r < 5000; r++ {
		if got := integerKey(r); got != k {
			t.Fatalf("integerKey(%d) = %q, want %q", r, got, k)
		}
		next, ok := incrementInteger(k)
		if !ok || next <= k {
			t.Fatalf("increment %q = %q", k, next)
		}
		k = next
	}
	big := integerKey(1 << 62)
	if !ValidIndexKey(big) || big <= integerKey(1<<62-1) {
		t.Fatalf("integerKey(2^62) = %q", big)
	}
}

func FuzzKeyBetween(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"a0", "a1"}, {"a0", ""}, {"", "a0"}, {"Zz", "a01"}, {"a0V", "a0l"}, {"b125", "b129"}, {"zzzzzzzzzzzzzzzzzzzzzzzzzzz", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k, err := KeyBetween(a, b)
		validA := a == "" || ValidIndexKey(a)
		validB := b == "" || ValidIndexKey(b)
		ordered := a == "" || b == "" || a < b
		if !validA || !validB || !ordered {
			if err == nil {
				t.Fatalf("KeyBetween(%q, %q) = %q, want an error", a, b, k)
			}
			return
		}
		if err != nil {
			// Only the ends of the key space may refuse.
			if b != "" && a == "" || a != "" && b == "" {
				return
			}
			t.Fatalf("KeyBetween(%q, %q): %v", a, b, err)
		}
		checkBetween(t, a, b, k)
	})
}
