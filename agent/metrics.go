package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the runner's Prometheus collectors (names prefixed canvas_agent_).
// A nil *Metrics records nothing.
type Metrics struct {
	ttfa         prometheus.Histogram
	modelLatency prometheus.Histogram
	actionCommit prometheus.Histogram
	actions      *prometheus.CounterVec
	conflicts    prometheus.Counter
	followups    *prometheus.CounterVec
	sessions     *prometheus.CounterVec
	screenshot   prometheus.Histogram
	screenshots  *prometheus.CounterVec
	ack          prometheus.Histogram
	jitter       prometheus.Histogram
	resends      prometheus.Counter
	acksMissed   prometheus.Counter
	tokens       *prometheus.CounterVec
}

// NewMetrics registers the runner's collectors on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{.001, .0025, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60}
	m := &Metrics{
		ttfa: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_time_to_first_action_seconds",
			Help: "Run start to the first complete action envelope.", Buckets: buckets}),
		modelLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_model_latency_seconds",
			Help: "Model call to the end of its stream, per turn.", Buckets: buckets}),
		actionCommit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_action_commit_seconds",
			Help: "A complete action in the model stream to its commit.", Buckets: buckets}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_agent_actions_total",
			Help: "Model actions by outcome (applied, meta, dropped, duplicate, rejected, conflict, skipped)."}, []string{"outcome"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "canvas_agent_conflicts_total",
			Help: "Conflicts with concurrent edits (409 or a protected shape)."}),
		followups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_agent_followups_total",
			Help: "Follow-up turns by kind (add_detail, low_action, replan)."}, []string{"kind"}),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_agent_sessions_total",
			Help: "Finished sessions by final state."}, []string{"state"}),
		screenshot: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_screenshot_seconds",
			Help: "A screenshot request to the host browser's answer (the SLO is 150 ms).", Buckets: buckets}),
		screenshots: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_agent_screenshots_total",
			Help: "Screenshots for turns by outcome (taken by the host browser, drawn by the server for want of one, cached, missed: the turn went on text-only)."}, []string{"outcome"}),
		ack: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_ack_seconds",
			Help: "A complete agent:action envelope sent to the host browser's ack of it.", Buckets: buckets}),
		jitter: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "canvas_agent_apply_jitter_seconds",
			Help: "The host browser's apply jitter, each acked envelope against the nearest seq acked before it (the SLO is p95 ≤ 50 ms).", Buckets: buckets}),
		resends: prometheus.NewCounter(prometheus.CounterOpts{Name: "canvas_agent_envelope_resends_total",
			Help: "Envelopes resent to the host browser for want of its ack."}),
		acksMissed: prometheus.NewCounter(prometheus.CounterOpts{Name: "canvas_agent_acks_missed_total",
			Help: "Envelopes the host browser never acked, resends included."}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "canvas_agent_model_tokens_total",
			Help: "Model tokens by provider (anthropic, openai, google) and kind (input: prompt tokens at the full price, cache_read, cache_creation, output)."},
			[]string{"provider", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.ttfa, m.modelLatency, m.actionCommit, m.actions, m.conflicts, m.followups, m.sessions,
			m.screenshot, m.screenshots, m.ack, m.jitter, m.resends, m.acksMissed, m.tokens)
	}
	return m
}

// addUsage counts a model call's tokens (u.nonNegative) under its provider
// (the model spec's prefix, a fixed small set).
func (m *Metrics) addUsage(provider string, u Usage) {
	if m == nil {
		return
	}
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.Input}, {"output", u.Output}, {"cache_read", u.CacheRead}, {"cache_creation", u.CacheCreation}} {
		m.tokens.WithLabelValues(provider, k.kind).Add(float64(k.n))
	}
}

func (m *Metrics) observeTTFA(d time.Duration) {
	if m != nil {
		m.ttfa.Observe(d.Seconds())
	}
}

func (m *Metrics) observeModel(d time.Duration) {
	if m != nil {
		m.modelLatency.Observe(d.Seconds())
	}
}

func (m *Metrics) observeCommit(d time.Duration) {
	if m != nil {
		m.actionCommit.Observe(d.Seconds())
	}
}

func (m *Metrics) action(outcome string) {
	if m != nil {
		m.actions.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) conflict() {
	if m != nil {
		m.conflicts.Inc()
	}
}

func (m *Metrics) followup(kind string) {
	if m != nil {
		m.followups.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) session(state string) {
	if m != nil {
		m.sessions.WithLabelValues(state).Inc()
	}
}

func (m *Metrics) observeScreenshot(d time.Duration) {
	if m != nil {
		m.screenshot.Observe(d.Seconds())
	}
}

func (m *Metrics) screenshotOutcome(outcome string) {
	if m != nil {
		m.screenshots.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) observeAck(d time.Duration) {
	if m != nil {
		m.ack.Observe(d.Seconds())
	}
}

func (m *Metrics) observeJitter(d time.Duration) {
	if m != nil {
		m.jitter.Observe(d.Seconds())
	}
}

func (m *Metrics) resend() {
	if m != nil {
		m.resends.Inc()
	}
}

func (m *Metrics) ackMissed() {
	if m != nil {
		m.acksMissed.Inc()
	}
}
