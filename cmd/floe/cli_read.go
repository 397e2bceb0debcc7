package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

func newDiffCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "diff FROM TO",
		Short: "List the keys whose content differs between two references",
		Long: "List the keys whose content differs between the trees of FROM and TO: ADDED\n" +
			"(only in TO), REMOVED (only in FROM) or MODIFIED.",
		Args: cobra.ExactArgs(2),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			d, err := cl.Diff(ctx, args[0], args[1])
			if err != nil {
				return fmt.Errorf("diff %s %s: %w", args[0], args[1], err)
			}
			if f.json {
				return writeJSON(out, d)
			}
			if len(d.Diffs) == 0 {
				return nil
			}
			t := newTable(out, "KEY", "CHANGE", "TYPE")
			for _, e := range d.Diffs {
				change, typ := "MODIFIED", ""
				switch {
				case e.From == nil && e.To != nil:
					change, typ = "ADDED", e.To.Type
				case e.To == nil && e.From != nil:
					change, typ = "REMOVED", e.From.Type
				case e.To != nil:
					typ = e.To.Type
					if e.From.Type != e.To.Type {
						typ = e.From.Type + "->" + e.To.Type
					}
				}
				t.row(e.Key.String(), change, typ)
			}
			return t.flush()
		}),
	}
	f.register(cmd)
	return cmd
}

func newShowCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "show REF:KEY",
		Short: "Print the content of a key at a reference as JSON",
		Long: "Print the content stored under KEY (dotted: ns.sub.table) at REF, which may be a\n" +
			"branch, tag, name@hash, @hash or a relative form such as main~1.",
		Args: cobra.ExactArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			// Reference names cannot hold ':', so the first one ends the ref.
			ref, rawKey, ok := strings.Cut(args[0], ":")
			if !ok || ref == "" || rawKey == "" {
				return fmt.Errorf("show %q: want REF:KEY, as in main:ns.table", args[0])
			}
			key, err := parseKey(rawKey)
			if err != nil {
				return err
			}
			c, err := cl.Content(ctx, ref, key)
			if err != nil {
				return fmt.Errorf("show %s: %w", args[0], err)
			}
			if f.json {
				return writeJSON(out, c)
			}
			var v any
			if c.Content == nil || json.Unmarshal(c.Content.Raw, &v) != nil {
				return fmt.Errorf("show %s: the server sent no content", args[0])
			}
			return writeJSON(out, v)
		}),
	}
	f.register(cmd)
	return cmd
}

func newLsCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "ls REF [NAMESPACE]",
		Short: "List the keys at a reference, optionally under a namespace",
		Args:  cobra.RangeArgs(1, 2),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			var prefix *nessieclient.ContentKey
			if len(args) == 2 {
				k, err := parseKey(args[1])
				if err != nil {
					return err
				}
				prefix = &k
			}
			entries, eff, err := cl.Entries(ctx, args[0], prefix)
			if err != nil {
				return fmt.Errorf("ls %s: %w", args[0], err)
			}
			if f.json {
				if entries == nil {
					entries = []nessieclient.Entry{}
				}
				return writeJSON(out, map[string]any{"entries": entries, "effectiveReference": eff})
			}
			t := newTable(out, "KEY", "TYPE", "CONTENT-ID")
			for _, e := range entries {
				t.row(e.Name.String(), e.Type, e.ContentID)
			}
			return t.flush()
		}),
	}
	f.register(cmd)
	return cmd
}
