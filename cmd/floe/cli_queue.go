package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
)

// queueFinal are the merge request states that end a request.
var queueFinal = []string{"merged", "failed", "cancelled", "rejected"}

func newQueueCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "The merge queue: submit merge requests, follow them, review them, read the report",
		Long: "The merge queue is the single committer of its target branches: a request\n" +
			"is merged by the target's worker, in arrival order, after its candidate\n" +
			"(the merge onto the target's current head) passed validation; a\n" +
			"change of a table's schema, partition spec or sort order waits for\n" +
			"review (rules: schemaChanges), then lands as the merge engine merges it.",
		Args: cobra.NoArgs,
	}
	f.register(cmd)

	var sub floeclient.SubmitMergeRequest
	var wait bool
	submit := &cobra.Command{
		Use:   "submit SOURCE",
		Short: "Enqueue a merge of SOURCE (branch, tag, name@hash, @hash) into --into",
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			sub.Source = args[0]
			r, err := cl.SubmitMergeRequest(ctx, sub)
			if err != nil {
				return fmt.Errorf("queue submit: %w", err)
			}
			if wait {
				return watchRequest(ctx, cl, out, r.ID, f.json)
			}
			return printRequest(out, r, f.json)
		}),
	}
	sf := submit.Flags()
	sf.StringVar(&sub.Target, "into", "main", "the branch to merge into")
	sf.StringSliceVar(&sub.Tables, "table", nil, "merge only this table, NAMESPACE.NAME (repeatable; default: every change of the source)")
	sf.IntVar(&sub.Priority, "priority", 0, "higher is taken first among requests within the age limit")
	sf.StringSliceVar(&sub.RequiredChecks, "check", nil, "a check that must pass on the candidate (repeatable)")
	sf.StringVar(&sub.IdempotencyKey, "idempotency-key", "", "a retried submit with the same key returns the first request")
	sf.StringVarP(&sub.Message, "message", "m", "", "a message for the merge commit")
	sf.BoolVar(&wait, "wait", false, "watch the request until it ends")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a merge request with its audit trail and validations",
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			r, err := cl.MergeRequest(ctx, args[0])
			if err != nil {
				return fmt.Errorf("queue show: %w", err)
			}
			return printRequest(out, r, f.json)
		}),
	}

	var filter floeclient.MergeRequestFilter
	list := &cobra.Command{
		Use:   "list",
		Short: "List merge requests in arrival order",
		Args:  cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			rs, err := cl.ListMergeRequests(ctx, filter)
			if err != nil {
				return fmt.Errorf("queue list: %w", err)
			}
			if f.json {
				return writeJSON(out, map[string]any{"requests": rs})
			}
			t := newTable(out, "ID", "STATE", "SOURCE", "TARGET", "CLASS", "CLASSIFICATION", "ENQUEUED", "REASON")
			for _, r := range rs {
				t.row(r.ID, r.State, r.Source, r.Target, r.Class, r.Classification, r.EnqueuedAt.Local().Format(time.DateTime), firstLine(r.Reason))
			}
			return t.flush()
		}),
	}
	lf := list.Flags()
	lf.StringVar(&filter.State, "state", "", "only requests in this state (queued, validating, review, merged, failed, cancelled, rejected)")
	lf.StringVar(&filter.Target, "target", "", "only requests into this branch")
	lf.StringVar(&filter.SourcePrefix, "source-prefix", "", "only requests whose source starts with this")
	lf.StringVar(&filter.Since, "since", "", "only requests enqueued since (24h, 7d, or an RFC 3339 time)")
	lf.IntVar(&filter.Limit, "limit", 0, "at most this many")

	watch := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a merge request's state changes until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			return watchRequest(ctx, cl, out, args[0], f.json)
		}),
	}

	cmd.AddCommand(submit, show, list, watch,
		changeCommand(f, "cancel", "Cancel a merge request that has not ended"),
		changeCommand(f, "approve", "Approve a merge request in review (it is queued again)"),
		changeCommand(f, "reject", "Reject a merge request in review"),
		reportCommand(f))
	return cmd
}

func changeCommand(f *clientFlags, action, short string) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			r, err := cl.ChangeMergeRequest(ctx, args[0], action, reason)
			if err != nil {
				return fmt.Errorf("queue %s: %w", action, err)
			}
			return printRequest(out, r, f.json)
		}),
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return c
}

func reportCommand(f *clientFlags) *cobra.Command {
	var since string
	c := &cobra.Command{
		Use:   "report",
		Short: "Per request class: count, classification mix, median wait and merge time, failures",
		Args:  cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			rep, err := cl.MergeQueueReport(ctx, since)
			if err != nil {
				return fmt.Errorf("queue report: %w", err)
			}
			if f.json {
				return writeJSON(out, rep)
			}
			fmt.Fprintf(out, "merge queue since %s\n", rep.Since.Local().Format(time.DateTime))
			t := newTable(out, "CLASS", "COUNT", "CLASSIFICATION", "MEDIAN WAIT", "MEDIAN MERGE", "FAILURES")
			for _, c := range rep.Classes {
				t.row(c.Class, fmt.Sprint(c.Count), mix(c.Classification, c.Batched, c.Review), seconds(c.MedianWaitSeconds),
					seconds(c.MedianMergeSeconds), failures(c.Failures, c.FailureReasons))
			}
			if err := t.flush(); err != nil {
				return err
			}
			for _, p := range rep.Pending {
				fmt.Fprintf(out, "%s: %d queued, %d in review\n", p.Target, p.Queued, p.Review)
			}
			for target, n := range rep.Bypass {
				fmt.Fprintf(out, "%s: %d commit(s) bypassed the queue\n", target, n)
			}
			return nil
		}),
	}
	c.Flags().StringVar(&since, "since", "24h", "report requests enqueued since (24h, 7d, or an RFC 3339 time)")
	return c
}

// mix prints a classification mix: "2 cherry-pick, 1 structural (3
// batched, 1 in review)".
func mix(m map[string]int, batched, review int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	s := strings.Join(parts, ", ")
	var notes []string
	if batched > 0 {
		notes = append(notes, fmt.Sprintf("%d batched", batched))
	}
	if review > 0 {
		notes = append(notes, fmt.Sprintf("%d in review", review))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	if s == "" {
		return "-"
	}
	return s
}

func failures(n int, reasons map[string]int) string {
	if n == 0 {
		return "0"
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", reasons[k], k))
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}

func printRequest(out io.Writer, r *floeclient.MergeRequest, asJSON bool) error {
	if asJSON {
		return writeJSON(out, r)
	}
	fmt.Fprintf(out, "merge request %s: %s into %s, %s\n", r.ID, r.Source, r.Target, r.State)
	if r.Reason != "" {
		fmt.Fprintf(out, "reason: %s\n", r.Reason)
	}
	fmt.Fprintf(out, "source commit %s, class %s, by %s, enqueued %s\n", short(r.SourceHash), r.Class, r.Principal, r.EnqueuedAt.Local().Format(time.DateTime))
	if len(r.Tables) > 0 {
		fmt.Fprintf(out, "tables: %s\n", strings.Join(r.Tables, ", "))
	}
	if r.Classification != "" {
		fmt.Fprintf(out, "classification: %s\n", r.Classification)
		for _, t := range r.TableClasses {
			fmt.Fprintf(out, "  %s: %s %s\n", t.Table, t.Class, t.Reason)
		}
	}
	for _, v := range r.Validations {
		verdict := "passed"
		if !v.Passed {
			verdict = "failed"
		}
		fmt.Fprintf(out, "validation of candidate %s (on %s): %s %s\n", short(v.Candidate), short(v.TargetHead), verdict, v.Error)
		for _, res := range v.Results {
			fmt.Fprintf(out, "  %s: %v %s (%.2fs)\n", res.Name, res.Passed, res.Reason, res.DurationSeconds)
		}
	}
	if r.LandedCommit != "" {
		fmt.Fprintf(out, "landed as %s onto %s\n", short(r.LandedCommit), short(r.LandedOnto))
	}
	for _, h := range r.Hygiene {
		fmt.Fprintf(out, "hygiene: %s\n", h)
	}
	for _, a := range r.Audit {
		fmt.Fprintf(out, "%s  %s -> %s by %s: %s\n", a.At.Local().Format(time.DateTime), a.From, a.To, a.Principal, a.Reason)
	}
	return nil
}

// watchPoll is how often watch asks for the request.
const watchPoll = time.Second

// watchRequest prints each state change of a request until it ends. It
// fails (non-zero exit) unless the request merged.
func watchRequest(ctx context.Context, cl *floeclient.Client, out io.Writer, id string, asJSON bool) error {
	seen := 0
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	for {
		r, err := cl.MergeRequest(ctx, id)
		if err != nil {
			return fmt.Errorf("queue watch: %w", err)
		}
		for _, a := range r.Audit[min(seen, len(r.Audit)):] {
			if !asJSON {
				fmt.Fprintf(out, "%s  %s: %s (%s)\n", a.At.Local().Format(time.DateTime), id, a.To, a.Reason)
			}
		}
		seen = len(r.Audit)
		if slices.Contains(queueFinal, r.State) {
			if asJSON {
				if err := writeJSON(out, r); err != nil {
					return err
				}
			}
			if r.State != "merged" {
				return fmt.Errorf("merge request %s %s: %s", id, r.State, r.Reason)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
