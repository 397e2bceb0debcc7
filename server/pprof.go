package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ListenProfiles opens the listener ServeProfiles serves on. Profiles
// have no authentication, so addr must be a loopback address.
func ListenProfiles(ctx context.Context, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("profiles address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("profiles address %q: must be a loopback address (profiles have no authentication)", addr)
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	return ln, nil
}

// ServeProfiles serves the Go runtime's profiles (net/http/pprof: CPU,
// heap, allocations, goroutines, traces) on ln until ctx ends, for
// measuring the server where it runs (`go tool pprof
// http://ADDR/debug/pprof/profile`). It is off unless the operator asks
// for it (floe serve --pprof-addr), on its own loopback listener
// (ListenProfiles), so that the API's port never exposes it and neither
// the API's authentication nor its timeouts apply to it.
func ServeProfiles(ctx context.Context, ln net.Listener, logger *slog.Logger) error {
	// Importing net/http/pprof also registers these on
	// http.DefaultServeMux, which nothing in floe serves.
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No write timeout: a CPU profile or trace streams for its seconds.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving profiles", "addr", ln.Addr().String())
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("profiles: %w", err)
	}
	return nil
}
