package eventhooks

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the deliveries' figures on /metrics, kept by the replica
// that delivers (over PostgreSQL, the lease holder); the API's status
// reads the durable state and is the same on every replica.
type metrics struct {
	attempts   *prometheus.CounterVec   // subscription, outcome (delivered, failed)
	latency    *prometheus.HistogramVec // subscription: a delivered attempt's duration
	deadLetter *prometheus.GaugeVec     // subscription: 1 while dead-lettered
	retrying   *prometheus.GaugeVec     // subscription: failed attempts at the pending event
	eventTime  *prometheus.GaugeVec     // subscription: time of the last delivered event
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_event_webhook_attempts_total",
			Help: "Delivery attempts of change-feed events to webhook subscriptions, by subscription and outcome (delivered, failed)."}, []string{"subscription", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_event_webhook_delivery_seconds",
			Help:    "Duration of a delivered attempt, by subscription.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30}}, []string{"subscription"}),
		deadLetter: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_event_webhook_dead_letter",
			Help: "1 while a subscription is dead-lettered: an event failed every attempt and delivery waits for an operator to resume it."}, []string{"subscription"}),
		retrying: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_event_webhook_failed_attempts",
			Help: "Failed attempts at the event a subscription is retrying; 0 when delivery is flowing."}, []string{"subscription"}),
		eventTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_event_webhook_delivered_event_time_seconds",
			Help: "Time of the last event delivered to a subscription (Unix seconds): time() minus it is how far delivery lags."}, []string{"subscription"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.attempts, m.latency, m.deadLetter, m.retrying, m.eventTime} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("event webhook metrics: %w", err)
			}
		}
	}
	return m, nil
}

// state publishes a subscription's durable state.
func (m *metrics) state(name string, st *State) {
	dead := 0.0
	if st.Status == StatusDeadLetter {
		dead = 1
	}
	m.deadLetter.WithLabelValues(name).Set(dead)
	m.retrying.WithLabelValues(name).Set(float64(st.Attempts))
}
