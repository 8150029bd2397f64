package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_commands_total",
			Help: "Commands handled, by command type and result (applied, conflict, rejected, replayed, error)."},
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
	reg.MustRegister(m.commands, m.applySeconds, m.conflicts, m.replays, m.sseSubscribers, m.gestures, m.refused)
	return m
}

// CommandDone records one command's outcome and latency (store.Observer).
func (m *Metrics) CommandDone(cmdType, outcome string, d time.Duration) {
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
