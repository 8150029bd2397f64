package agent

import (
	"bufio"
	"bytes"
	"io"
)

// sseReader reads server-sent events from a model provider's streaming
// response: each call to next returns one event's name and data.
type sseReader struct {
	lines *bufio.Scanner
}

// newSSEReader reads events from r; an event's data may be up to 16 MiB.
func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	return &sseReader{lines: sc}
}

// next returns the next event: its name ("" when it has no event: line) and
// its data lines joined by newlines. Events without data (comments,
// keep-alives) are skipped. At the end of the body it returns io.EOF; a
// last event without its closing blank line is still returned.
func (r *sseReader) next() (event string, data []byte, err error) {
	for r.lines.Scan() {
		line := r.lines.Bytes()
		if len(line) == 0 {
			if data != nil {
				return event, data, nil
			}
			event = ""
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		} // id:, retry: and comments carry nothing here
	}
	if err := r.lines.Err(); err != nil {
		return "", nil, err
	}
	if data != nil {
		return event, data, nil
	}
	return "", nil, io.EOF
}
