package server

import (
	"context"
	"net/http"
	"time"
)

// readinessTimeout bounds one readiness probe; a store that cannot answer a
// cheap check this fast should not receive traffic.
const readinessTimeout = 2 * time.Second

type probeStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// healthz reports that the process is alive and serving HTTP. It checks
// nothing else on purpose: a failing store must not get the process killed
// and restarted by a liveness probe, it must only take it out of rotation.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, probeStatus{Status: "ok"})
}

// readyz reports whether this process should receive traffic: not while
// shutting down, and only while the store answers its check.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, probeStatus{Status: "unavailable", Reason: "shutting down"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
	defer cancel()
	if err := s.store.Check(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, probeStatus{Status: "unavailable", Reason: "version store: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, probeStatus{Status: "ok"})
}
