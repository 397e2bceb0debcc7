package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
)

func newEventsCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "The catalog's change feed: what happened, from a cursor",
		Long: "Every change to the catalog is an event with an id, its cursor: tables and\n" +
			"views created, updated, renamed, dropped; namespaces; branches and tags\n" +
			"created, moved, deleted; commits, merges and transplants. Reading after the\n" +
			"id of the last event handled gives every later event once, in order, across\n" +
			"restarts of floe. You see the events on branches and tags you may read.",
		Args: cobra.NoArgs,
	}
	f.register(cmd)

	var q floeclient.EventQuery
	var follow bool
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print events after --after, then follow new ones (Ctrl-C ends)",
		Long: "Prints the events after --after (default: now, so only what happens next;\n" +
			"\"\" or 0 from the beginning), one a line, then waits for more by long\n" +
			"polling until interrupted; --follow=false stops at the end. The id in the\n" +
			"first column is the cursor to resume from. With --json, each event is\n" +
			"the API's JSON object, one a line.",
		Args: cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			// Long polls end before the client's timeout does.
			q.Wait = max(f.timeout-5*time.Second, time.Second)
			if !follow {
				q.Wait = 0
			}
			return tailEvents(ctx, cl, out, q, follow, f.json)
		}),
	}
	tf := tail.Flags()
	tf.StringVar(&q.After, "after", "now", "the cursor to start after: an event id, \"now\", or \"0\" for the beginning")
	tf.StringSliceVar(&q.Refs, "ref", nil, "only events on this branch or tag (repeatable)")
	tf.StringSliceVar(&q.Types, "types", nil, "only events of these types, e.g. table.*,merge (repeatable)")
	tf.BoolVar(&follow, "follow", true, "wait for new events; --follow=false stops at the end of the feed")
	cmd.AddCommand(tail)

	cmd.AddCommand(&cobra.Command{
		Use:   "webhooks",
		Short: "The webhook subscriptions (floe serve --event-webhooks) and their delivery state",
		Long: "One line per subscription: name, status (active or dead-letter), the\n" +
			"cursor delivered up to, events delivered, and for an event being retried\n" +
			"or dead-lettered its id, type, ref, attempts and last error.",
		Args: cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			hooks, err := cl.Webhooks(ctx)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, hooks)
			}
			for _, h := range hooks {
				fmt.Fprintln(out, describeWebhook(h))
			}
			return nil
		}),
	})
	var skip bool
	resume := &cobra.Command{
		Use:   "resume NAME",
		Short: "Resume a dead-lettered webhook subscription",
		Long: "Delivery starts again with the dead-lettered event and fresh attempts, or\n" +
			"with --skip after it (that event is then never delivered).",
		Args: cobra.ExactArgs(1),
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			h, err := cl.ResumeWebhook(ctx, args[0], skip)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(out, h)
			}
			fmt.Fprintln(out, describeWebhook(*h))
			return nil
		}),
	}
	resume.Flags().BoolVar(&skip, "skip", false, "resume after the dead-lettered event instead of with it")
	cmd.AddCommand(resume)
	return cmd
}

// describeWebhook is one subscription on one line.
func describeWebhook(h floeclient.Webhook) string {
	st := h.State
	if st == nil {
		return fmt.Sprintf("%s\tnot started\t%s", h.Name, h.URL)
	}
	line := fmt.Sprintf("%s\t%s\tcursor %s\t%d delivered\t%s", h.Name, st.Status, st.Cursor, st.Delivered, h.URL)
	if st.Pending != "" {
		line += fmt.Sprintf("\tpending %s %s on %s after %d attempt(s): %s", st.Pending, st.PendingType, st.PendingRef, st.Attempts, st.LastError)
	}
	return line
}

// tailEvents prints pages of events until the feed's end (follow false) or
// until ctx ends.
func tailEvents(ctx context.Context, cl *floeclient.Client, out io.Writer, q floeclient.EventQuery, follow, asJSON bool) error {
	for {
		page, err := cl.Events(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return err
		}
		for _, ev := range page.Events {
			if asJSON {
				fmt.Fprintln(out, string(ev.Raw))
				continue
			}
			fmt.Fprintln(out, describeEvent(ev))
		}
		if !follow && page.Next == q.After {
			return nil
		}
		q.After = page.Next
	}
}

// describeEvent is one event on one line: id, time, type, ref, who, and
// what the kind says.
func describeEvent(ev floeclient.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%s\t%-17s\t%s\t%s\t%s", ev.ID, ev.Time.Format(time.RFC3339), ev.Type, ev.Ref, ev.Principal, short(ev.Commit))
	switch {
	case ev.Content != nil:
		fmt.Fprintf(&b, "\t%s", strings.Join(ev.Content.Key, "."))
		if ev.Content.PreviousKey != nil {
			fmt.Fprintf(&b, " (from %s)", strings.Join(ev.Content.PreviousKey, "."))
		}
		if ic := ev.Content.Iceberg; ic != nil {
			if ic.Operation != "" {
				fmt.Fprintf(&b, " %s", ic.Operation)
			}
			if n, ok := ic.Summary["added-records"]; ok {
				fmt.Fprintf(&b, " +%s records", n)
			}
			if n, ok := ic.Summary["deleted-records"]; ok {
				fmt.Fprintf(&b, " -%s records", n)
			}
		}
		if ev.Content.Via != "commit" {
			fmt.Fprintf(&b, " via %s", ev.Content.Via)
		}
	case ev.CommitDetails != nil:
		if ev.CommitDetails.Source != "" {
			fmt.Fprintf(&b, "\tfrom %s", short(ev.CommitDetails.Source))
		}
		fmt.Fprintf(&b, "\t%s", firstLine(ev.CommitDetails.Message))
	case ev.Move != nil:
		fmt.Fprintf(&b, "\t%s -> %s", short(ev.Move.From), short(ev.Move.To))
		if ev.Move.FastForward {
			b.WriteString(" (fast-forward)")
		}
		if ev.Move.Reason != "" {
			fmt.Fprintf(&b, " (%s)", ev.Move.Reason)
		}
	}
	return b.String()
}
