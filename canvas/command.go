package canvas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MaxIdempotencyKeyLen bounds idempotency keys and command ids.
const MaxIdempotencyKeyLen = 200

// Envelope is a CommandEnvelope as clients send it.
type Envelope struct {
	ID             string          `json:"id,omitempty"`
	Type           string          `json:"type"`
	BaseRev        *int64          `json:"base_rev"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Strict         bool            `json:"strict,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	// HeadBase: the caller sent no base_rev and BaseRev is the head the
	// server filled in (MCP tools); the fingerprint leaves it out, so that a
	// retry with the same idempotency key, at a head that moved, matches.
	HeadBase bool `json:"-"`
}

// DecodeEnvelope strictly decodes one envelope: unknown top-level fields,
// trailing data, a missing type or base_rev, or a non-object args are ErrInvalid.
func DecodeEnvelope(data []byte) (Envelope, error) {
	if e, ok := decodeEnvelopeFast(data); ok {
		return e, e.Validate()
	}
	return decodeEnvelopeSlow(data)
}

// decodeEnvelopeSlow is DecodeEnvelope with encoding/json, for every body.
func decodeEnvelopeSlow(data []byte) (Envelope, error) {
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Envelope{}, Invalid("body", "not a valid CommandEnvelope: %v", jsonErrText(err))
	}
	if !atEOF(dec) {
		return Envelope{}, Invalid("body", "trailing data after the CommandEnvelope")
	}
	return e, e.Validate()
}

// Validate checks the envelope's shape (not its args; the reducer does that).
func (e *Envelope) Validate() error {
	if e.Type == "" {
		return Invalid("type", "is required, e.g. \"create_node\"")
	}
	if len(e.Type) > 64 {
		return Invalid("type", "is longer than 64 characters")
	}
	if e.BaseRev == nil {
		return Invalid("base_rev", "is required: send the head_rev you last read (GET /canvas_commands/snapshot/{canvas_id})")
	}
	if *e.BaseRev < 0 {
		return Invalid("base_rev", "must be ≥ 0, got %d", *e.BaseRev)
	}
	if len(e.ID) > MaxIdempotencyKeyLen {
		return Invalid("id", "is longer than %d characters", MaxIdempotencyKeyLen)
	}
	if len(e.IdempotencyKey) > MaxIdempotencyKeyLen {
		return Invalid("idempotency_key", "is longer than %d characters", MaxIdempotencyKeyLen)
	}
	args := bytes.TrimSpace(e.Args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		e.Args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return Invalid("args", "must be a JSON object")
	}
	return nil
}

// Fingerprint is a canonical form of the envelope used to tell a replay of
// an idempotency key (same envelope) from a misuse (different envelope).
// Its args are in canonical form (canonicalJSON): numbers as sent
// (1795461385736852721 ≠ …723), keys sorted, no whitespace. Fingerprints
// are stored with idempotency keys, so the form must not change.
func (e *Envelope) Fingerprint() string {
	base := int64(-1)
	if e.BaseRev != nil && !e.HeadBase {
		base = *e.BaseRev
	}
	b := make([]byte, 0, len(e.ID)+len(e.Type)+len(e.Args)+32)
	b = append(append(append(append(b, e.ID...), 0), e.Type...), 0)
	b = append(strconv.AppendInt(b, base, 10), 0)
	b = append(strconv.AppendBool(b, e.Strict), 0)
	return string(append(b, canonicalJSON(e.Args)...))
}

// Command is an envelope ready for the reducer: authenticated, with the
// revision it would commit as, a timestamp, and a seed for minting ids. The
// reducer is deterministic given a Command and a State.
type Command struct {
	CanvasID string
	ID       string // the envelope id, or one minted by the engine
	Type     string
	BaseRev  int64
	Strict   bool
	Args     json.RawMessage
	Actor    Actor
	Rev      int64     // the revision this command commits as (head+1)
	TS       time.Time // commit timestamp
	Seed     string    // random per command; minted ids derive from it
	// Snapshot is, for revert_to_snapshot only, the canvas state at the named
	// snapshot's revision, loaded by the engine before Decide (nil otherwise).
	// Decide only reads it.
	Snapshot *State
	// Revert is, for revert_commits only, what the commits it names changed,
	// read from the log before Decide (reducer.LoadRevert; nil otherwise).
	// Decide only reads it.
	Revert *RevertBase
}

func jsonErrText(err error) string {
	switch t := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("JSON syntax error at byte %d: %v", t.Offset, t)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %q must be %s, got JSON %s", t.Field, t.Type, t.Value)
	}
	return err.Error()
}

// DecodeStrict decodes JSON args into v, rejecting unknown fields and trailing data,
// and names the offending field in the error (kind ErrUnprocessable, prefixed "args").
// Numbers in fields of type any (props) stay json.Number: exactly as sent.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		field := "args"
		if t, ok := err.(*json.UnmarshalTypeError); ok && t.Field != "" {
			field = "args." + t.Field
		}
		return Unprocessable(field, "%s", jsonErrText(err))
	}
	if !atEOF(dec) {
		return Unprocessable("args", "trailing data after the args object")
	}
	return nil
}

// atEOF reports whether nothing but white space follows the decoded value
// (dec.More misses a stray closing bracket).
func atEOF(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
}

// UnmarshalExact decodes JSON like json.Unmarshal, except that numbers in
// fields of type any (props, patches) stay json.Number, exactly as the client
// sent them (float64 would turn 1795461385736852721 into
// 1795461385736852700). Decode stored or encoded canvas data with it.
func UnmarshalExact(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if !atEOF(dec) {
		return fmt.Errorf("trailing data after the JSON value: %w", ErrInvalid)
	}
	return nil
}

// UnmarshalChanges decodes a JSON array of changes as the event log holds
// them: numbers in props stay exact (json.Number) while the other fields of
// a patch (x, y, w, ...) decode as the float64 the reducer wrote, so a commit
// read back equals the live one.
func UnmarshalChanges(data []byte, out *[]Change) error {
	if err := UnmarshalExact(data, out); err != nil {
		return err
	}
	NormalizePatchNumbers(*out)
	return nil
}

// NormalizePatchNumbers turns the json.Number top-level fields of each
// patch, other than props, into the float64 the reducer writes there.
func NormalizePatchNumbers(cs []Change) {
	for i := range cs {
		for k, v := range cs[i].Patch {
			if n, ok := v.(json.Number); ok && k != "props" {
				if f, err := n.Float64(); err == nil {
					cs[i].Patch[k] = f
				}
			}
		}
	}
}
