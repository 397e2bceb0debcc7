package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/internal/floeclient"
	"github.com/floe-catalog/floe/internal/nessieclient"
)

// retentionFlags are --max-age, --keep-commits and --keep-history, of
// `branch create` and `branch retention`.
type retentionFlags struct {
	maxAge, keepHistory string
	keepCommits         int
}

func (r *retentionFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.maxAge, "max-age", "", "delete the ref this long after its last commit (or creation): 48h, 7d; 0 never")
	cmd.Flags().IntVar(&r.keepCommits, "keep-commits", 0, "commits of history kept reachable for time travel and GC; 0 keeps all")
	cmd.Flags().StringVar(&r.keepHistory, "keep-history", "", "age of history kept reachable for time travel and GC: 7d; 0 keeps all")
}

// changed reports whether any of the flags was given.
func (r *retentionFlags) changed(cmd *cobra.Command) bool {
	fl := cmd.Flags()
	return fl.Changed("max-age") || fl.Changed("keep-commits") || fl.Changed("keep-history")
}

// apply writes the flags given onto set, checking their notation here so
// that a typo fails before anything is created.
func (r *retentionFlags) apply(cmd *cobra.Command, set *floeclient.RetentionSettings) error {
	fl := cmd.Flags()
	dur := func(name, v string) (*string, error) {
		d, err := refretention.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		s := refretention.FormatDuration(d)
		return &s, nil
	}
	var err error
	if fl.Changed("max-age") {
		if set.MaxAge, err = dur("max-age", r.maxAge); err != nil {
			return err
		}
	}
	if fl.Changed("keep-history") {
		if set.KeepHistory, err = dur("keep-history", r.keepHistory); err != nil {
			return err
		}
	}
	if fl.Changed("keep-commits") {
		if r.keepCommits < 0 {
			return fmt.Errorf("--keep-commits cannot be negative")
		}
		n := r.keepCommits
		set.KeepCommits = &n
	}
	return nil
}

// runBoth is run for commands that speak both the Nessie API and floe's
// own.
func (f *clientFlags) runBoth(fn func(ctx context.Context, cmd *cobra.Command, ncl *nessieclient.Client, fcl *floeclient.Client, out io.Writer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ncl, err := f.client(cmd)
		if err != nil {
			return err
		}
		fcl, err := f.floeClient(cmd)
		if err != nil {
			return err
		}
		err = fn(cmd.Context(), cmd, ncl, fcl, cmd.OutOrStdout(), args)
		if f.json {
			var body []byte
			if ne, ok := errors.AsType[*nessieclient.Error](err); ok {
				body = ne.Body
			} else if fe, ok := errors.AsType[*floeclient.Error](err); ok {
				body = fe.Body
			}
			var v any
			if len(body) > 0 && json.Unmarshal(body, &v) == nil {
				_ = writeJSON(cmd.OutOrStdout(), v)
			}
		}
		return err
	}
}

// partialCreate is a ref created whose retention could not be set. It
// keeps the cause's text but not its type, so that --json prints one
// object (the create's, with the error inside) rather than two.
type partialCreate struct{ msg string }

func (e *partialCreate) Error() string { return e.msg }

// createRetention sets the retention of a ref just created. The ref stays
// if it fails: it then has its prefix's defaults, and the error says how
// to set it again.
func createRetention(ctx context.Context, cmd *cobra.Command, fcl *floeclient.Client, noun, name string, set floeclient.RetentionSettings) (*floeclient.RefStatus, error) {
	st, err := fcl.SetRetention(ctx, name, set)
	if err == nil {
		return st, nil
	}
	var flags []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name == "max-age" || fl.Name == "keep-commits" || fl.Name == "keep-history" {
			flags = append(flags, "--"+fl.Name+" "+fl.Value.String())
		}
	})
	return nil, &partialCreate{msg: fmt.Sprintf("created %s %s, but setting its retention failed: %v; it has the defaults of its prefix until `floe %s retention %s %s` succeeds",
		noun, name, err, noun, name, strings.Join(flags, " "))}
}

// newRetentionCommand is `floe branch retention NAME` (and `floe tag
// retention`): show a ref's retention, or change it with the flags.
func newRetentionCommand(f *clientFlags, noun string) *cobra.Command {
	rf := &retentionFlags{}
	var clear bool
	cmd := &cobra.Command{
		Use:   "retention NAME",
		Short: "Show or set a " + noun + "'s retention: its max age and the history kept",
		Long: "Without flags, show the " + noun + "'s own retention settings and the ones that apply\n" +
			"(its own, else the default of its name's prefix). With flags, change the ones given;\n" +
			"--clear drops its own settings so the defaults apply again.\n" +
			"A ref expires its max age after its last commit (or its creation, if later).",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = f.runBoth(func(ctx context.Context, cmd *cobra.Command, _ *nessieclient.Client, cl *floeclient.Client, out io.Writer, args []string) error {
		name := args[0]
		var st *floeclient.RefStatus
		var err error
		switch {
		case clear && rf.changed(cmd):
			return fmt.Errorf("--clear cannot be combined with --max-age, --keep-commits or --keep-history")
		case clear:
			st, err = cl.ClearRetention(ctx, name)
		case rf.changed(cmd):
			cur, err := cl.Retention(ctx, name)
			if err != nil {
				return fmt.Errorf("%s %s: %w", noun, name, err)
			}
			set := cur.Own
			if err := rf.apply(cmd, &set); err != nil {
				return err
			}
			st, err = cl.SetRetention(ctx, name, set)
			if err != nil {
				return fmt.Errorf("set retention of %s %s: %w", noun, name, err)
			}
		default:
			st, err = cl.Retention(ctx, name)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", noun, name, err)
		}
		if f.json {
			return writeJSON(out, st)
		}
		return printRetention(out, st)
	})
	rf.register(cmd)
	cmd.Flags().BoolVar(&clear, "clear", false, "drop the ref's own settings: the defaults of its prefix apply again")
	return cmd
}

func printRetention(out io.Writer, st *floeclient.RefStatus) error {
	own := func(s *string) string {
		if s == nil {
			return "(default)"
		}
		return *s
	}
	commits := "(default)"
	if st.Own.KeepCommits != nil {
		commits = fmt.Sprint(*st.Own.KeepCommits)
	}
	r := st.Retention
	t := newTable(out, "", "OWN", "APPLIES", "FROM")
	t.row("max age", own(st.Own.MaxAge), neverIfZero(r.MaxAge), r.MaxAgeSource)
	t.row("keep commits", commits, allIfZero(fmt.Sprint(r.KeepCommits)), r.KeepCommitsSource)
	t.row("keep history", own(st.Own.KeepHistory), allIfZero(r.KeepHistory), r.KeepHistorySource)
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%s %s, age %s, last activity %s: %s\n", strings.ToLower(st.Type), st.Name, st.Age,
		st.LastActivity.Local().Format(time.DateTime), expiryText(st))
	return err
}

func neverIfZero(s string) string {
	if s == "0" || s == "" {
		return "never"
	}
	return s
}

func allIfZero(s string) string {
	if s == "0" || s == "" {
		return "all"
	}
	return s
}

// expiryText says when a ref expires, for people.
func expiryText(st *floeclient.RefStatus) string {
	switch {
	case st.ExpiresAt == nil:
		return "never expires"
	case st.Expired:
		return "expired (deleted at the next expiry sweep)"
	}
	return "expires " + st.ExpiresAt.Local().Format(time.DateTime) + " (in " + roughDuration(time.Until(*st.ExpiresAt)) + ")"
}

// roughDuration is d in its two largest units: 2d3h, 5h12m, 40s.
func roughDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	const day = 24 * time.Hour
	switch {
	case d >= day:
		return fmt.Sprintf("%dd%dh", d/day, (d%day)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, (d%time.Minute)/time.Second)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// newExpireCommand is `floe branch expire [--dry-run]`: one expiry sweep
// now, over branches and tags (admins only in the default policy).
func newExpireCommand(f *clientFlags) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "expire",
		Short: "Delete every expired branch and tag now (--dry-run: only list them)",
		Args:  cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			res, err := cl.ExpireRefs(ctx, dryRun)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, res)
			}
			verb := "Deleted"
			if dryRun {
				verb = "Would delete"
			}
			if len(res.Expired) == 0 {
				_, err := fmt.Fprintf(out, "No expired references among %d\n", res.Checked)
				return err
			}
			t := newTable(out, "NAME", "TYPE", "HASH", "MAX AGE", "FROM", "LAST ACTIVITY")
			for _, e := range res.Expired {
				t.row(e.Name, strings.ToLower(e.Type), short(e.Hash), e.MaxAge, e.MaxAgeSource, e.LastActivity.Local().Format(time.DateTime))
			}
			if err := t.flush(); err != nil {
				return err
			}
			for _, s := range res.Skipped {
				fmt.Fprintf(out, "Skipped %s: %s\n", s.Name, s.Reason)
			}
			_, err = fmt.Fprintf(out, "%s %d of %d references\n", verb, len(res.Expired), res.Checked)
			return err
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	return cmd
}

// refAges fetches every ref's age and expiry from floe's API for `branch
// list`. Without it (a server that predates the API answers 404, or an
// error) the columns stay empty, with a note on stderr for an error: the
// list itself comes from the Nessie API.
func refAges(ctx context.Context, cl *floeclient.Client, stderr io.Writer) map[string]floeclient.RefStatus {
	all, err := cl.Refs(ctx)
	if err != nil {
		if fe, ok := errors.AsType[*floeclient.Error](err); !ok || fe.Status != http.StatusNotFound {
			fmt.Fprintf(stderr, "floe: note: ages and expiry unavailable: %v\n", err)
		}
		return nil
	}
	m := make(map[string]floeclient.RefStatus, len(all))
	for _, st := range all {
		m[st.Name] = st
	}
	return m
}

// listedRef is one entry of `branch list --json`: the Nessie reference and,
// when floe's API answered, its age and retention.
type listedRef struct {
	nessieclient.Reference
	Created    *time.Time                     `json:"created,omitempty"`
	Age        string                         `json:"age,omitempty"`
	LastCommit *time.Time                     `json:"lastCommit,omitempty"`
	ExpiresAt  *time.Time                     `json:"expiresAt,omitempty"`
	Expired    bool                           `json:"expired,omitempty"`
	Retention  *floeclient.EffectiveRetention `json:"retention,omitempty"`
}
