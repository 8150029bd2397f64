package convert

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"testing"
)

// TestAppendQuoteIsStrconvs: the signatures stored with imported objects
// hash appendQuote's text, so it must stay strconv.Quote's exactly.
func TestAppendQuoteIsStrconvs(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		for _, s := range []string{string(r), "a" + string(r) + "b", "plain ASCII ~", "\x7f\"\\", "bad\xff"} {
			if got, want := string(appendQuote([]byte("x"), s)), "x"+strconv.Quote(s); got != want {
				t.Fatalf("appendQuote(%q) = %s, want %s", s, got, want)
			}
		}
	}
}

// TestSignatureIsFNV: signatures stored with imported objects stay the
// FNV-1a hash, written as %016x, of each member's canonical text.
func TestSignatureIsFNV(t *testing.T) {
	o := obj{"id": "n1", "x": 12.0, "y": json.Number("-3"), "text": "Card 1\nwith two lines", "color": "1",
		"nested": map[string]any{"b": []any{true, nil}, "a": "é"}, "seed": json.Number("42")}
	carry := map[string]bool{"seed": true}
	h := fnv.New64a()
	for _, k := range []string{"color", "id", "nested", "text", "x", "y"} {
		h.Write(append(appendCanon([]byte(k+"="), o[k]), ';'))
	}
	if got, want := signature(o, carry), fmt.Sprintf("%016x", h.Sum64()); got != want {
		t.Errorf("signature = %s, want %s", got, want)
	}
}
