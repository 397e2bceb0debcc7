package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

func newBranchCommand() *cobra.Command { return newRefCommand(nessieclient.Branch) }

func newTagCommand() *cobra.Command { return newRefCommand(nessieclient.Tag) }

// newRefCommand builds `floe branch` or `floe tag`: list, create, delete
// and assign. Writes first read the reference's current hash and send it
// as the expected hash, so a concurrent move fails instead of being lost.
func newRefCommand(typ string) *cobra.Command {
	noun := strings.ToLower(typ) // "branch" or "tag"
	plural := noun + "s"
	if typ == nessieclient.Branch {
		plural = noun + "es"
	}
	f := &clientFlags{}
	list := f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, _ []string) error {
		return listRefs(ctx, cl, out, typ, f.json)
	})
	cmd := &cobra.Command{
		Use:   noun,
		Short: "List, create, delete or move " + plural,
		Args:  cobra.NoArgs,
		RunE:  list,
	}
	f.register(cmd)

	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List " + plural + " with their head commits",
		Args:  cobra.NoArgs,
		RunE:  list,
	})

	var from string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a " + noun + " at the head of --from (default: the default branch)",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			src := from
			if src == "" {
				src = "-" // the default branch
			}
			at, err := cl.Resolve(ctx, src)
			if err != nil {
				return fmt.Errorf("resolve %s: %w", src, err)
			}
			ref, err := cl.CreateReference(ctx, args[0], typ, *at)
			if err != nil {
				return fmt.Errorf("create %s %s: %w", noun, args[0], err)
			}
			if f.json {
				return writeJSON(out, map[string]any{"reference": ref})
			}
			_, err = fmt.Fprintf(out, "Created %s %s at %s (from %s)\n", noun, ref.Name, short(ref.Hash), refLabel(at))
			return err
		}),
	}
	create.Flags().StringVar(&from, "from", "", "reference or hash to start from (name, name@hash, @hash, main~2)")
	cmd.AddCommand(create)

	cmd.AddCommand(&cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a " + noun,
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			cur, err := currentRef(ctx, cl, args[0], typ)
			if err != nil {
				return err
			}
			ref, err := cl.DeleteReference(ctx, cur.Name, typ, cur.Hash)
			if err != nil {
				return fmt.Errorf("delete %s %s: %w", noun, args[0], err)
			}
			if f.json {
				return writeJSON(out, map[string]any{"reference": ref})
			}
			_, err = fmt.Fprintf(out, "Deleted %s %s (was %s)\n", noun, ref.Name, short(ref.Hash))
			return err
		}),
	})

	cmd.AddCommand(&cobra.Command{
		Use:   "assign NAME REF",
		Short: "Move a " + noun + " to the commit REF names",
		Args:  cobra.ExactArgs(2),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			cur, err := currentRef(ctx, cl, args[0], typ)
			if err != nil {
				return err
			}
			to, err := cl.Resolve(ctx, args[1])
			if err != nil {
				return fmt.Errorf("resolve %s: %w", args[1], err)
			}
			ref, err := cl.AssignReference(ctx, cur.Name, typ, cur.Hash, *to)
			if err != nil {
				return fmt.Errorf("assign %s %s: %w", noun, args[0], err)
			}
			if f.json {
				return writeJSON(out, map[string]any{"reference": ref})
			}
			_, err = fmt.Fprintf(out, "Moved %s %s from %s to %s\n", noun, ref.Name, short(cur.Hash), short(ref.Hash))
			return err
		}),
	})
	return cmd
}

// currentRef reads the reference name and checks it has the type the
// command is about.
func currentRef(ctx context.Context, cl *nessieclient.Client, name, typ string) (*nessieclient.Reference, error) {
	ref, err := cl.Reference(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", strings.ToLower(typ), name, err)
	}
	if ref.Type != typ {
		return nil, fmt.Errorf("%s is a %s, not a %s", name, strings.ToLower(ref.Type), strings.ToLower(typ))
	}
	return ref, nil
}

func listRefs(ctx context.Context, cl *nessieclient.Client, out io.Writer, typ string, asJSON bool) error {
	all, err := cl.References(ctx)
	if err != nil {
		return err
	}
	refs := []nessieclient.Reference{}
	for _, r := range all {
		if r.Type == typ {
			refs = append(refs, r)
		}
	}
	if asJSON {
		return writeJSON(out, map[string]any{"references": refs})
	}
	t := newTable(out, "NAME", "HASH")
	for _, r := range refs {
		t.row(r.Name, short(r.Hash))
	}
	return t.flush()
}
