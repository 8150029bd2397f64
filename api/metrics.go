package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/reducer"
)

// Metrics are canvasd's Prometheus collectors, registered on an injected
// registry. It implements store.Observer.
type Metrics struct {
	commands       *prometheus.CounterVec
	applySeconds   *prometheus.HistogramVec
	conflicts      prometheus.Counter
	replays        prometheus.Counter
	sseSubscribers prometheus.Gauge
	gestures       *prometheus.CounterVec
	refused        *prometheus.CounterVec
	reg            prometheus.Registerer
	// commandTypes are the values canvas_commands_total's type label
	// takes: the verbs the reducer knows and "batch"; any other type a
	// client sends counts as "other", so clients cannot grow the family.
	commandTypes map[string]bool
}

// otherType is the type label of a command whose type the reducer does not know.
const otherType = "other"

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{reg: reg, commandTypes: map[string]bool{"batch": true},
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_commands_total",
			Help: "Commands handled, by command type (a known verb, batch, or other for an unknown type) and result (applied, conflict, rejected, replayed, error)."},
			[]string{"type", "result"}),
		applySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "canvas_command_apply_seconds",
			Help:    "Time from a command entering the engine to its answer, by result.",
			Buckets: []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1}},
			[]string{"result"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "canvas_conflicts_total",
			Help: "Commands answered 409 because their base_rev was stale and conflicting."}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{Name: "canvas_idempotent_replays_total",
			Help: "Commands answered from a stored idempotency record."}),
		sseSubscribers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "canvas_sse_subscribers",
			Help: "Open SSE streams."}),
		gestures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_gestures_total",
			Help: "Gestures received, by whether they were forwarded or throttled."}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_http_too_many_requests_total",
			Help: "Requests answered 429, by problem type (too-many-streams, too-many-auth-failures)."}, []string{"type"}),
	}
	for _, t := range reducer.CommandTypes() {
		m.commandTypes[t] = true
	}
	reg.MustRegister(m.commands, m.applySeconds, m.conflicts, m.replays, m.sseSubscribers, m.gestures, m.refused)
	return m
}

// WatchHub exports h's fan-out counters: canvas_sse_frames_total by path
// (direct, queued), canvas_sse_direct_writes_total and
// canvas_sse_streams_behind_total.
func (m *Metrics) WatchHub(h *hub.Hub) {
	for path, n := range map[string]func() int64{"direct": func() int64 { return h.Stats().Direct }, "queued": func() int64 { return h.Stats().Queued }} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "canvas_sse_frames_total",
			Help:        "Stream frames delivered, per subscriber, by path: direct (written to the socket by the fan-out) or queued (by the stream's goroutine).",
			ConstLabels: prometheus.Labels{"path": path}},
			func() float64 { return float64(n()) }))
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "canvas_sse_direct_writes_total",
		Help: "System calls that wrote the direct frames; more frames than calls: the fan-out fell behind and wrote frames that piled up together."},
		func() float64 { return float64(h.Stats().DirectWrites) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "canvas_sse_streams_behind_total",
		Help: "Streams ended with a reset event because their subscriber fell too far behind."},
		func() float64 { return float64(h.Stats().Behind) }))
}

// CommandDone records one command's outcome and latency (store.Observer).
// A type the reducer does not know is counted as "other".
func (m *Metrics) CommandDone(cmdType, outcome string, d time.Duration) {
	if !m.commandTypes[cmdType] {
		cmdType = otherType
	}
	m.commands.WithLabelValues(cmdType, outcome).Inc()
	m.applySeconds.WithLabelValues(outcome).Observe(d.Seconds())
	switch outcome {
	case "conflict":
		m.conflicts.Inc()
	case "replayed":
		m.replays.Inc()
	}
}

// SubscriberDelta adjusts the open-stream gauge (the Hub's onCount).
func (m *Metrics) SubscriberDelta(delta int) { m.sseSubscribers.Add(float64(delta)) }

// Gesture counts one gesture, forwarded or throttled (result).
func (m *Metrics) Gesture(result string) { m.gestures.WithLabelValues(result).Inc() }

// TooManyRequests counts one request answered 429 with problem type slug.
func (m *Metrics) TooManyRequests(slug string) { m.refused.WithLabelValues(slug).Inc() }
