package canvas

import "time"

// HostFile is one file of a canvas host session: a page or asset an agent
// wrote, served under /host/{session}/{path}. Package host validates session
// names and paths before a file reaches a store.
type HostFile struct {
	Session  string
	Path     string // relative, "/"-separated, no empty, "." or ".." segments
	Data     []byte // nil in listings
	Size     int64  // len(Data) when it was stored
	Modified time.Time
}
