package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
	"github.com/floe-catalog/floe/internal/nessieclient"
)

// exitLockHeld is the exit code of `floe maintenance lock` when another
// job holds the lock, so a scheduled job tells "skip this cycle" from a
// failure (exit 1).
const exitLockHeld = 2

// exitCodeError is an error that asks main for an exit code other than 1.
type exitCodeError struct {
	err  error
	code int
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// exitCode is the process exit code for err (non-nil).
func exitCode(err error) int {
	if ec, ok := errors.AsType[*exitCodeError](err); ok {
		return ec.code
	}
	return 1
}

// lockTokenEnv is where unlock and renew find the token when --token is
// not given, so that it need not show in a process listing.
const lockTokenEnv = "FLOE_MAINTENANCE_LOCK"

func newMaintenanceCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Take, renew, release and show tables' maintenance locks",
		Long: "A maintenance lock is an advisory lease on one table on one branch. A maintenance job\n" +
			"(compaction, snapshot expiry, manifest rewrite) takes it or skips this cycle; while it is\n" +
			"held, the table's maintenance commits that do not carry its token (the Iceberg catalog\n" +
			"property header.Floe-Maintenance-Lock) fail with 409, and ordinary writes continue.\n" +
			"The lease ends when released or when its ttl runs out, so a crashed job frees it.",
		Args: cobra.NoArgs,
	}
	f.register(cmd)

	var (
		branch, job, token string
		ttl                time.Duration
		quiet              bool
	)
	lock := &cobra.Command{
		Use:   "lock TABLE",
		Short: "Take TABLE's maintenance lock, or exit 2 naming its holder if another job has it",
		Long: "Take TABLE's maintenance lock on --branch for --ttl and print its token, which unlock,\n" +
			"renew and the job's maintenance commits need. If another job holds the lock, print who\n" +
			"holds it and until when, and exit 2: the job should skip this cycle. Other errors exit 1.\n\n" +
			"  TOKEN=$(floe maintenance lock sales.orders --job nightly-compaction --ttl 1h -q) || exit 0",
		Args: cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			key, err := parseKey(args[0])
			if err != nil {
				return err
			}
			if job == "" {
				job = defaultJobName()
			}
			lease, err := cl.AcquireLock(ctx, branch, key.Elements, job, ttl)
			if held := floeclient.HeldLock(err); held != nil {
				return &exitCodeError{code: exitLockHeld, err: fmt.Errorf("%s on branch %s is locked for maintenance by %s (job %q) until %s: skip this cycle",
					key, held.Branch, held.Holder.Principal, held.Holder.Job, held.Expires.UTC().Format(time.RFC3339))}
			}
			if err != nil {
				return err
			}
			switch {
			case f.json:
				return writeJSON(out, lease)
			case quiet:
				_, err := fmt.Fprintln(out, lease.Token)
				return err
			}
			_, err = fmt.Fprintf(out, "Locked %s on branch %s for job %q until %s (lock %s)\ntoken: %s\n",
				key, lease.Branch, lease.Holder.Job, lease.Expires.UTC().Format(time.RFC3339), lease.ID, lease.Token)
			return err
		}),
	}
	lock.Flags().StringVar(&job, "job", "", "name of the maintenance job, shown to whoever finds the lock held (default floe-<host>-<pid>)")
	lock.Flags().DurationVar(&ttl, "ttl", 0, "how long the lease lasts unless renewed (default 30m)")
	lock.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the token")
	cmd.AddCommand(lock)

	// heldLease finds the live lease unlock and renew act on, and the token.
	heldLease := func(ctx context.Context, cl *floeclient.Client, table string) (*floeclient.Lock, string, error) {
		key, err := parseKey(table)
		if err != nil {
			return nil, "", err
		}
		tok := token
		if tok == "" {
			tok = os.Getenv(lockTokenEnv)
		}
		if tok == "" {
			return nil, "", fmt.Errorf("the lease's token is required: --token or $%s", lockTokenEnv)
		}
		l, err := cl.FindLock(ctx, branch, key.Elements)
		if err != nil {
			return nil, "", err
		}
		if l == nil {
			return nil, "", fmt.Errorf("%s on branch %s is not locked (released, or the lease expired)", key, branchOrMain(branch))
		}
		return l, tok, nil
	}
	unlock := &cobra.Command{
		Use:   "unlock TABLE",
		Short: "Release TABLE's maintenance lock (needs the lease's token)",
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			l, tok, err := heldLease(ctx, cl, args[0])
			if err != nil {
				return err
			}
			if err := cl.ReleaseLock(ctx, l.ID, tok); err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, map[string]any{"released": l})
			}
			_, err = fmt.Fprintf(out, "Released %s on branch %s (job %q)\n", args[0], l.Branch, l.Holder.Job)
			return err
		}),
	}
	renew := &cobra.Command{
		Use:   "renew TABLE",
		Short: "Extend TABLE's maintenance lease by --ttl from now (needs the lease's token)",
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			l, tok, err := heldLease(ctx, cl, args[0])
			if err != nil {
				return err
			}
			l, err = cl.RenewLock(ctx, l.ID, tok, ttl)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, l)
			}
			_, err = fmt.Fprintf(out, "Renewed %s on branch %s for job %q until %s\n", args[0], l.Branch, l.Holder.Job, l.Expires.UTC().Format(time.RFC3339))
			return err
		}),
	}
	for _, c := range []*cobra.Command{unlock, renew} {
		c.Flags().StringVar(&token, "token", "", "the lease's token, as lock printed it [$"+lockTokenEnv+"]")
	}
	renew.Flags().DurationVar(&ttl, "ttl", 0, "the lease's new time to live, from now (default 30m)")
	cmd.AddCommand(unlock, renew)

	status := &cobra.Command{
		Use:   "status [TABLE]",
		Short: "Show TABLE's maintenance lock, or every lock held on --branch",
		Args:  cobra.MaximumNArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			if len(args) == 1 {
				key, err := parseKey(args[0])
				if err != nil {
					return err
				}
				l, err := cl.FindLock(ctx, branch, key.Elements)
				if err != nil {
					return err
				}
				if f.json {
					return writeJSON(out, map[string]any{"lock": l})
				}
				if l == nil {
					_, err = fmt.Fprintf(out, "%s on branch %s: not locked\n", key, branchOrMain(branch))
					return err
				}
				_, err = fmt.Fprintf(out, "%s on branch %s: %s\n", key, l.Branch, describeLock(l))
				return err
			}
			locks, err := cl.ListLocks(ctx, branch, nil)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, map[string]any{"locks": locks})
			}
			if len(locks) == 0 {
				_, err := fmt.Fprintln(out, "No maintenance locks held.")
				return err
			}
			sort.Slice(locks, func(i, j int) bool {
				a, b := locks[i], locks[j]
				return a.Branch+"\x00"+strings.Join(a.Table, ".") < b.Branch+"\x00"+strings.Join(b.Table, ".")
			})
			t := newTable(out, "TABLE", "BRANCH", "PRINCIPAL", "JOB", "EXPIRES")
			for _, l := range locks {
				t.row(nessieclient.ContentKey{Elements: l.Table}.String(), l.Branch, l.Holder.Principal, l.Holder.Job, l.Expires.UTC().Format(time.RFC3339))
			}
			return t.flush()
		}),
	}
	cmd.AddCommand(status)
	for _, c := range []*cobra.Command{lock, unlock, renew, status} {
		c.Flags().StringVar(&branch, "branch", "", "the catalog branch (default main)")
	}
	return cmd
}

func branchOrMain(b string) string {
	if b == "" {
		return "main"
	}
	return b
}

func describeLock(l *floeclient.Lock) string {
	return fmt.Sprintf("locked by %s (job %q) since %s, until %s (lock %s)", l.Holder.Principal, l.Holder.Job,
		l.Acquired.UTC().Format(time.RFC3339), l.Expires.UTC().Format(time.RFC3339), l.ID)
}

func defaultJobName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("floe-%s-%d", host, os.Getpid())
}

func newTableCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Show tables' statistics",
		Args:  cobra.NoArgs,
	}
	f.register(cmd)
	var (
		branch string
		since  time.Duration
	)
	stats := &cobra.Command{
		Use:   "stats TABLE",
		Short: "Snapshots per operation over --since, the current snapshot's totals and the maintenance lock",
		Long: "Count TABLE's snapshots on --branch committed in the last --since by operation, with\n" +
			"their rate per hour (the best single proxy for commit contention), show the current\n" +
			"snapshot's totals (records, files, bytes) and the table's maintenance lock. Counted from\n" +
			"the table's current metadata, so expired snapshots are not counted.",
		Args: cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			key, err := parseKey(args[0])
			if err != nil {
				return err
			}
			st, err := cl.TableStats(ctx, branch, key.Elements, since)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, st)
			}
			return printTableStats(out, key.String(), st)
		}),
	}
	stats.Flags().StringVar(&branch, "branch", "", "the catalog branch (default main)")
	stats.Flags().DurationVar(&since, "since", 24*time.Hour, "the window to count snapshots over, ending now")
	cmd.AddCommand(stats)
	return cmd
}

func printTableStats(out io.Writer, name string, st *floeclient.TableStats) error {
	window := st.Until.Sub(st.Since)
	fmt.Fprintf(out, "%s on branch %s\n", name, st.Branch)
	fmt.Fprintf(out, "metadata: %s\n", st.MetadataLocation)
	fmt.Fprintf(out, "snapshots in the last %s: %d (of %d the metadata lists)\n", formatWindow(window), st.SnapshotsInWindow, st.SnapshotsTotal)
	if len(st.Snapshots) > 0 {
		ops := make([]string, 0, len(st.Snapshots))
		for op := range st.Snapshots {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		t := newTable(out, "  OPERATION", "SNAPSHOTS", "PER-HOUR")
		for _, op := range ops {
			s := st.Snapshots[op]
			t.row("  "+op, fmt.Sprint(s.Count), fmt.Sprintf("%.3f", s.PerHour))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if c := st.Current; c != nil {
		op := c.Operation
		if op == "" {
			op = "no summary"
		}
		fmt.Fprintf(out, "current snapshot: %d (%s, %s): %s records, %s data files, %s delete files, %s\n", c.SnapshotID, op, c.Committed,
			orUnknown(c.Records), orUnknown(c.DataFiles), orUnknown(c.DeleteFiles), bytesOrUnknown(c.FilesSize))
	} else {
		fmt.Fprintln(out, "current snapshot: none")
	}
	lock := "none"
	if st.Lock != nil {
		lock = describeLock(st.Lock)
	}
	_, err := fmt.Fprintf(out, "maintenance lock: %s\n", lock)
	return err
}

func formatWindow(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, unit := range []string{"h", "m"} {
		s = strings.Replace(s, unit+"0m0s", unit, 1)
		s = strings.Replace(s, unit+"0s", unit, 1)
	}
	return s
}

func orUnknown(v *int64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}

func bytesOrUnknown(v *int64) string {
	if v == nil {
		return "? bytes"
	}
	n := float64(*v)
	for _, unit := range []string{"bytes", "KiB", "MiB", "GiB", "TiB"} {
		if n < 1024 || unit == "TiB" {
			if unit == "bytes" {
				return fmt.Sprintf("%d bytes", *v)
			}
			return fmt.Sprintf("%.1f %s", n, unit)
		}
		n /= 1024
	}
	return ""
}
