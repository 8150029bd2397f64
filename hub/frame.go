package hub

import (
	"bytes"
	"encoding/json"
	"strings"
)

// HeartbeatComment is the SSE comment a stream sends when idle.
const HeartbeatComment = ": heartbeat\n\n"

// EncodeFrame renders one SSE event. event and id are our own tokens; data is
// split on line breaks so user content can never inject a field or event.
func EncodeFrame(event, id string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(event) + len(id) + 32)
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(StripBreaks(id))
		b.WriteByte('\n')
	}
	if event != "" {
		b.WriteString("event: ")
		b.WriteString(StripBreaks(event))
		b.WriteByte('\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n\x00")
		if i < 0 {
			break
		}
		b.WriteString("data: ")
		b.Write(data[:i])
		b.WriteByte('\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// StripBreaks removes CR, LF and NUL from s (an SSE id or event name).
func StripBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\n\x00") {
		return s
	}
	return strings.NewReplacer("\r", "", "\n", "", "\x00", "").Replace(s)
}

// EncodeEvent renders an event whose data is v encoded as JSON.
func EncodeEvent(event, id string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	return EncodeFrame(event, id, data)
}
