package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Config is everything floe's HTTP server needs: its Settings, plain
// data, and the routes and services it serves. The zero value of any
// field means its default (see DefaultConfig), so tests set only what they
// care about.
type Config struct {
	Settings

	// Mounts add the APIs' routes, in order, before the server accepts
	// connections.
	Mounts []Mount
	// Registry is where the server's metrics (HTTP, Go, process, version
	// store) are registered and what /metrics serves; the APIs' collectors
	// belong in it too. nil means a new private registry.
	Registry *prometheus.Registry

	// TracerProvider traces every request but the probes (a server span,
	// continuing a caller's W3C traceparent) and puts its trace id in the
	// access log; nil is the no-op provider, which records nothing.
	TracerProvider trace.TracerProvider

	// OnListen, if set, is called with the bound address once the listener
	// is open and before requests are served.
	OnListen func(net.Addr)

	// AuthenticateUnmatched, if set, wraps the answers to requests no
	// route matched (404, 405), with the APIs' Authenticate signature: the
	// server passes the writer of its 401. Unknown paths then authenticate
	// first, as every known API route does, so an unauthenticated caller
	// learns nothing about which paths exist.
	AuthenticateUnmatched func(onError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler
}

// Settings are the server's plain settings: address, limits, timeouts
// (a configuration file's or flags' part of Config).
type Settings struct {
	// Addr is the TCP address to listen on. Port 0 picks a free port; the
	// bound address is logged and passed to OnListen. Serve is given its
	// listener; Addr is for the caller that opens it.
	Addr string

	// MaxBodyBytes caps every request body. Larger requests get 413.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the bytes of request bodies all requests
	// in flight hold together (bodybudget.go); a request whose body does
	// not fit gets 503 with Retry-After. 0 derives it: an eighth of the Go
	// runtime's soft memory limit when one is set, else 8 × MaxBodyBytes,
	// never less than MaxBodyBytes. Negative turns the bound off.
	MaxBodyBytesInFlight int64

	// HTTP server timeouts, see net/http.Server.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration

	// DrainDelay is how long /readyz answers 503 before the listener closes
	// on shutdown, so load balancers stop routing new requests first.
	DrainDelay time.Duration
	// ShutdownTimeout bounds how long in-flight requests may take to finish
	// after shutdown begins; then remaining connections are closed.
	ShutdownTimeout time.Duration
}

// Mount adds one API's routes to the router: a plain route registration
// over services built before the server (see package assemble), never the
// place a service is created. The router decodes nothing: it matches on
// the encoded path (UseEncodedPath), so path variables arrive still
// percent-encoded and the API decides how to decode them.
type Mount func(r *mux.Router) error

// Defaults applied to zero Config fields.
const (
	DefaultAddr              = "127.0.0.1:8181"
	DefaultMaxBodyBytes      = 16 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownTimeout   = 30 * time.Second
)

// DefaultConfig returns the HTTP configuration `floe serve` starts with.
func DefaultConfig() Config {
	return Config{Settings: Settings{
		Addr:              DefaultAddr,
		MaxBodyBytes:      DefaultMaxBodyBytes,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		ShutdownTimeout:   DefaultShutdownTimeout,
	}}
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = d.ReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes must not be negative, got %d", c.MaxBodyBytes))
	}
	if c.MaxBodyBytesInFlight > 0 && c.MaxBodyBytesInFlight < c.MaxBodyBytes {
		// A body between the two could never be served, however long its
		// client retried.
		errs = append(errs, fmt.Errorf("max body bytes in flight (%d) must be at least max body bytes (%d)", c.MaxBodyBytesInFlight, c.MaxBodyBytes))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read header timeout", c.ReadHeaderTimeout},
		{"read timeout", c.ReadTimeout},
		{"write timeout", c.WriteTimeout},
		{"idle timeout", c.IdleTimeout},
		{"drain delay", c.DrainDelay},
		{"shutdown timeout", c.ShutdownTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}
