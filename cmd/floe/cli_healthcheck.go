package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/server"
)

// newHealthcheckCommand is `floe healthcheck`: one GET of the local
// server's /healthz (or /readyz), exit 0 on 200. It exists for container
// healthchecks (deploy/Dockerfile, deploy/compose): the image holds this
// binary and nothing else, no shell and no curl.
func newHealthcheckCommand() *cobra.Command {
	var addr string
	var ready bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the local server's /healthz (or /readyz with --ready) answers 200",
		Long: "healthcheck asks the floe server listening on --addr (default $FLOE_ADDR, as\n" +
			"`floe serve` reads it, else " + server.DefaultAddr + ") whether it is alive (/healthz)\n" +
			"or ready for traffic (/readyz, with --ready), and exits 1 unless it answers\n" +
			"200. An unspecified host (0.0.0.0, [::]) is asked on loopback.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr == "" {
				addr = os.Getenv(envName("addr"))
			}
			if addr == "" {
				addr = server.DefaultAddr
			}
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			url, err := probeURL(addr, path)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return probe(ctx, url)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "", "listen address of the server to ask (default $FLOE_ADDR, else "+server.DefaultAddr+")")
	f.BoolVar(&ready, "ready", false, "ask /readyz (ready for traffic) instead of /healthz (alive)")
	f.DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

// probeURL turns a listen address into the URL of one of its probes; a
// server listening on every interface is reached on loopback.
func probeURL(addr, path string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}

func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
