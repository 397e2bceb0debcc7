package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
	"github.com/floe-catalog/floe/internal/nessieclient"
)

// defaultServer is where the client commands look for a server when
// neither --server nor FLOE_SERVER says otherwise.
const defaultServer = "http://127.0.0.1:8181"

// shortHash is how many hex digits of a commit hash human output shows;
// the server accepts abbreviations of 8 or more.
const shortHash = 12

// clientFlags are the connection and output flags every client command
// has.
type clientFlags struct {
	server  string
	json    bool
	timeout time.Duration
}

// register adds the flags to cmd and its subcommands.
func (f *clientFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.server, "server", defaultServer, "URL of the floe server [$FLOE_SERVER]")
	pf.BoolVar(&f.json, "json", false, "print the API's JSON objects instead of tables")
	pf.DurationVar(&f.timeout, "timeout", nessieclient.DefaultTimeout, "timeout of each request to the server")
}

// client connects to the server named by --server, else FLOE_SERVER, else
// the default, sending FLOE_TOKEN as a bearer token. The token has no flag
// so that it never shows in a process listing.
func (f *clientFlags) client(cmd *cobra.Command) (*nessieclient.Client, error) {
	return nessieclient.New(f.serverURL(cmd), nessieclient.Options{
		Token:     os.Getenv("FLOE_TOKEN"),
		Timeout:   f.timeout,
		UserAgent: "floe/" + version,
	})
}

// serverURL is --server, else FLOE_SERVER, else the default.
func (f *clientFlags) serverURL(cmd *cobra.Command) string {
	if !cmd.Flags().Changed("server") {
		if v := os.Getenv("FLOE_SERVER"); v != "" {
			return v
		}
	}
	return f.server
}

// floeClient is client for floe's own API (/api/floe/v1): the same
// server, token and timeout.
func (f *clientFlags) floeClient(cmd *cobra.Command) (*floeclient.Client, error) {
	return floeclient.New(f.serverURL(cmd), floeclient.Options{
		Token:     os.Getenv("FLOE_TOKEN"),
		Timeout:   f.timeout,
		UserAgent: "floe/" + version,
	})
}

// runFloe is run for commands of floe's own API: with --json, a refused
// request also prints the server's error object on stdout.
func (f *clientFlags) runFloe(fn func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, err := f.floeClient(cmd)
		if err != nil {
			return err
		}
		err = fn(cmd.Context(), cl, cmd.OutOrStdout(), args)
		if apiErr, ok := errors.AsType[*floeclient.Error](err); ok && f.json && len(apiErr.Body) > 0 {
			var v any
			if json.Unmarshal(apiErr.Body, &v) == nil {
				_ = writeJSON(cmd.OutOrStdout(), v)
			}
		}
		return err
	}
}

// run returns a RunE that connects and calls fn. With --json, a request
// the server refused also prints the server's error object on stdout; the
// one-line message still goes to stderr and the exit code is non-zero.
func (f *clientFlags) run(fn func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, err := f.client(cmd)
		if err != nil {
			return err
		}
		err = fn(cmd.Context(), cl, cmd.OutOrStdout(), args)
		var apiErr *nessieclient.Error
		if f.json && errors.As(err, &apiErr) && len(apiErr.Body) > 0 {
			var v any
			if json.Unmarshal(apiErr.Body, &v) == nil {
				_ = writeJSON(cmd.OutOrStdout(), v)
			}
		}
		return err
	}
}

// writeJSON prints v indented, one object per command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns; rows are tab-separated cells.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

func short(hash string) string {
	if len(hash) > shortHash {
		return hash[:shortHash]
	}
	return hash
}

// firstLine is a commit message's subject.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// refLabel names a resolved reference for messages: "main", or a hash.
func refLabel(r *nessieclient.Reference) string {
	if r.Name != "" {
		return r.Name
	}
	return short(r.Hash)
}

// defaultBranch asks the server for its default branch.
func defaultBranch(ctx context.Context, cl *nessieclient.Client) (string, error) {
	cfg, err := cl.Config(ctx)
	if err != nil {
		return "", err
	}
	return cfg.DefaultBranch, nil
}

// parseKey reads a dotted content key from the command line.
func parseKey(s string) (nessieclient.ContentKey, error) {
	k, err := nessieclient.ParseKey(s)
	if err != nil {
		return k, fmt.Errorf("bad content key: %w", err)
	}
	return k, nil
}
