package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// sseFrame renders one SSE event. event and id are our own tokens; data is
// split on line breaks so user content can never inject a field or event.
func sseFrame(event, id string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(event) + len(id) + 32)
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(stripBreaks(id))
		b.WriteByte('\n')
	}
	if event != "" {
		b.WriteString("event: ")
		b.WriteString(stripBreaks(event))
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

func stripBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\n\x00") {
		return s
	}
	return strings.NewReplacer("\r", "", "\n", "", "\x00", "").Replace(s)
}

// sseEvent renders an event whose data is v encoded as JSON.
func sseEvent(event, id string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	return sseFrame(event, id, data)
}

// startSSE writes the stream headers and flushes them.
func startSSE(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return rc
}

// heartbeatComment is the comment line sent when a stream is otherwise idle.
const heartbeatComment = ": heartbeat\n\n"
