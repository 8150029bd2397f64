package store

import (
	"os"
	"runtime/debug"
)

// ServerGCPercent is the garbage collector's target (GOGC) that canvasd
// serves with when the GOGC environment variable does not set one. The
// engine keeps every loaded canvas in memory, so the live heap is mostly
// canvas state, and at Go's default of 100 each collection marks all of it
// again after only as many bytes were allocated. At 200 collections are
// half as frequent; the price is a heap that may grow to about three times
// the live data (GOMEMLIMIT caps it softly). 400 raised the resident
// memory of an idle SSE stream from about 19 to 24 KiB (`make bench`,
// 10,000 streams), for a write speed-up the benchmarks could not tell from
// their noise.
const ServerGCPercent = 200

// TuneGC sets ServerGCPercent unless GOGC is set in the environment. The
// server binary calls it at start, and the benchmarks of the performance
// targets do too, so that they measure the server as it runs.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(ServerGCPercent)
	}
}
