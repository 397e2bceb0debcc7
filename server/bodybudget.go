package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// bodyBudget bounds the bytes of request bodies that all requests in
// flight hold together. One body is bounded by MaxBodyBytes, but a
// handler holds its body, and what it decoded from it, until it answers:
// 24 concurrent 15 MiB bodies once took RSS to 1.66 GB under a 480 MiB
// soft memory limit (issue 32). Past the budget a request is answered 503
// with Retry-After instead of being read, which every client floe serves
// retries.
type bodyBudget struct {
	limit int64
	used  atomic.Int64

	inFlight prometheus.GaugeFunc
	refused  prometheus.Counter
}

// bodyBudgetDivisor is the share of the Go runtime's soft memory limit the
// default budget gives request bodies: an eighth, because a decoded body
// costs several times its bytes (the 1.66 GB above was 4.6 times the 360
// MiB of bodies), and the rest of the limit holds the caches and the work
// of requests without large bodies.
const bodyBudgetDivisor = 8

// bodyBudgetBodies is the default budget in bodies of MaxBodyBytes when no
// memory limit is set.
const bodyBudgetBodies = 8

// bodyRetryAfter is the Retry-After of a request refused for the budget,
// in seconds: bodies in flight are answered within a request's time.
const bodyRetryAfter = 1

// defaultBodyBudget derives the budget: an eighth of the soft memory
// limit the process runs under (floe serve sets it from the cache budgets,
// or GOMEMLIMIT), else bodyBudgetBodies bodies of maxBody; never less than
// one body of maxBody, so a lone request of the largest size accepted is
// always served.
func defaultBodyBudget(maxBody int64) int64 {
	// SetMemoryLimit with a negative value reads the limit without
	// changing it; math.MaxInt64 means none is set.
	if memLimit := debug.SetMemoryLimit(-1); memLimit != math.MaxInt64 {
		return max(memLimit/bodyBudgetDivisor, maxBody)
	}
	if maxBody > math.MaxInt64/bodyBudgetBodies {
		return math.MaxInt64
	}
	return bodyBudgetBodies * maxBody
}

func newBodyBudget(limit int64, reg prometheus.Registerer) (*bodyBudget, error) {
	b := &bodyBudget{limit: limit}
	b.inFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "floe_http_request_body_bytes_in_flight",
		Help: "Bytes of request bodies held by requests in flight, against the bound --max-body-bytes-in-flight.",
	}, func() float64 { return float64(b.used.Load()) })
	b.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "floe_http_request_bodies_refused_total",
		Help: "Requests answered 503 because their bodies would have taken the request bodies in flight past --max-body-bytes-in-flight.",
	})
	limitGauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "floe_http_request_body_bytes_in_flight_limit",
		Help: "The bound on bytes of request bodies in flight (--max-body-bytes-in-flight, or derived from the memory limit).",
	})
	limitGauge.Set(float64(limit))
	for _, c := range []prometheus.Collector{b.inFlight, b.refused, limitGauge} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register request body metrics: %w", err)
		}
	}
	return b, nil
}

// reserve takes n bytes of the budget if they fit. Two requests racing
// for the last bytes may both be refused where one would fit; that errs
// toward memory, and both are told to retry.
func (b *bodyBudget) reserve(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) release(n int64) {
	if n != 0 {
		b.used.Add(-n)
	}
}

// errOverBudget is what a body read past the budget returns to the
// handler; the response is then replaced by the 503 (tooLargeWriter).
var errOverBudget = errors.New("request bodies in flight exceed the server's bound")

// writeBusy answers a request whose body does not fit the budget, in the
// error model the server's other answers use. The connection is closed
// after the answer: the body was not read, and a client still sending it
// should stop.
func writeBusy(w http.ResponseWriter, limit int64) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(bodyRetryAfter))
	h.Set("Connection", "close")
	writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException",
		fmt.Sprintf("the server holds the most request body bytes it allows in flight (%d); retry after %ds", limit, bodyRetryAfter))
}
