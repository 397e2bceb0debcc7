package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
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
	list := f.runBoth(func(ctx context.Context, cmd *cobra.Command, cl *nessieclient.Client, fcl *floeclient.Client, out io.Writer, _ []string) error {
		return listRefs(ctx, cl, out, typ, f.json, func() map[string]floeclient.RefStatus { return refAges(ctx, fcl, cmd.ErrOrStderr()) })
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
		Short: "List " + plural + " with their head commits, ages and expiry",
		Args:  cobra.NoArgs,
		RunE:  list,
	})

	var from string
	rf := &retentionFlags{}
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a " + noun + " at the head of --from (default: the default branch)",
		Long: "Create a " + noun + " at the head of --from (default: the default branch).\n\n" +
			"--max-age, --keep-commits and --keep-history set its retention through floe's API\n" +
			"once it exists; without them it has the defaults of its name's prefix. If that second\n" +
			"call fails, the " + noun + " stays, with its defaults, and the error says how to retry.",
		Args: cobra.ExactArgs(1),
		RunE: f.runBoth(func(ctx context.Context, cmd *cobra.Command, cl *nessieclient.Client, fcl *floeclient.Client, out io.Writer, args []string) error {
			var set floeclient.RetentionSettings
			if err := rf.apply(cmd, &set); err != nil {
				return err
			}
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
			var st *floeclient.RefStatus
			var retErr error
			if rf.changed(cmd) {
				st, retErr = createRetention(ctx, cmd, fcl, noun, ref.Name, set)
			}
			if f.json {
				v := map[string]any{"reference": ref}
				if st != nil {
					v["retention"] = st
				}
				if retErr != nil {
					v["retentionError"] = retErr.Error()
				}
				if err := writeJSON(out, v); err != nil {
					return err
				}
				return retErr
			}
			if _, err = fmt.Fprintf(out, "Created %s %s at %s (from %s)\n", noun, ref.Name, short(ref.Hash), refLabel(at)); err != nil {
				return err
			}
			if st != nil {
				_, err = fmt.Fprintf(out, "Retention: max age %s, history kept %s; %s\n", neverIfZero(st.Retention.MaxAge), historyText(st.Retention), expiryText(st))
			}
			return errors.Join(err, retErr)
		}),
	}
	create.Flags().StringVar(&from, "from", "", "reference or hash to start from (name, name@hash, @hash, main~2)")
	rf.register(create)
	cmd.AddCommand(create)
	cmd.AddCommand(newRetentionCommand(f, noun))
	if typ == nessieclient.Branch {
		cmd.AddCommand(newExpireCommand(f))
	}

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

// listRefs lists the refs of one type from the Nessie API, with each
// one's age and expiry from floe's API (ages; nil when unavailable).
func listRefs(ctx context.Context, cl *nessieclient.Client, out io.Writer, typ string, asJSON bool, ages func() map[string]floeclient.RefStatus) error {
	all, err := cl.References(ctx)
	if err != nil {
		return err
	}
	byName := ages()
	refs := []listedRef{}
	for _, r := range all {
		if r.Type != typ {
			continue
		}
		lr := listedRef{Reference: r}
		if st, ok := byName[r.Name]; ok && !st.Created.IsZero() {
			created, ret := st.Created, st.Retention
			lr.Created, lr.Age, lr.LastCommit, lr.ExpiresAt, lr.Expired, lr.Retention = &created, st.Age, st.LastCommit, st.ExpiresAt, st.Expired, &ret
		}
		refs = append(refs, lr)
	}
	if asJSON {
		return writeJSON(out, map[string]any{"references": refs})
	}
	t := newTable(out, "NAME", "HASH", "AGE", "EXPIRES")
	for _, r := range refs {
		age, expires := "-", "-"
		if r.Created != nil {
			age = roughDuration(time.Since(*r.Created))
			switch {
			case r.ExpiresAt == nil:
				expires = "never"
			case r.Expired:
				expires = "expired"
			default:
				expires = "in " + roughDuration(time.Until(*r.ExpiresAt))
			}
		}
		t.row(r.Name, short(r.Hash), age, expires)
	}
	return t.flush()
}

// historyText says how much history a retention keeps.
func historyText(r floeclient.EffectiveRetention) string {
	switch {
	case r.KeepCommits == 0 && (r.KeepHistory == "0" || r.KeepHistory == ""):
		return "all"
	case r.KeepCommits == 0:
		return r.KeepHistory
	case r.KeepHistory == "0" || r.KeepHistory == "":
		return fmt.Sprintf("%d commits", r.KeepCommits)
	}
	return fmt.Sprintf("%d commits or %s", r.KeepCommits, r.KeepHistory)
}
