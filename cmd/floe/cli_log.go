package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

// logPage is how many commits one history request asks for; the server
// caps a page at 250.
const logPage = 250

func newLogCommand() *cobra.Command {
	f := &clientFlags{}
	var oneline, graph bool
	var max int
	cmd := &cobra.Command{
		Use:   "log [REF]",
		Short: "Show the commit history of a reference",
		Long: "Show the commits of REF (default: the default branch), newest first.\n\n" +
			"Without --graph the log follows first parents, as the Nessie API does: a\n" +
			"merge shows as one commit. --graph follows every parent and draws the\n" +
			"merged histories as lanes, like git log --graph.",
		Args: cobra.MaximumNArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			ref := "-" // the default branch
			if len(args) == 1 {
				ref = args[0]
			}
			var entries []nessieclient.LogEntry
			var err error
			if graph {
				entries, err = graphHistory(ctx, cl, ref, max)
			} else {
				entries, err = firstParentLog(ctx, cl, ref, max)
			}
			if err != nil {
				return fmt.Errorf("log %s: %w", ref, err)
			}
			if f.json {
				if entries == nil {
					entries = []nessieclient.LogEntry{}
				}
				return writeJSON(out, map[string]any{"logEntries": entries})
			}
			if len(entries) == 0 {
				// An empty answer would look like a hang or a failure.
				_, err := fmt.Fprintf(out, "no commits on %s yet\n", logRefName(ref))
				return err
			}
			if graph {
				cfg, err := cl.Config(ctx)
				if err != nil {
					return err
				}
				return printGraph(out, entries, cfg.NoAncestorHash, oneline)
			}
			if oneline {
				for _, e := range entries {
					fmt.Fprintf(out, "%s %s\n", short(e.CommitMeta.Hash), firstLine(e.CommitMeta.Message))
				}
				return nil
			}
			t := newTable(out)
			for _, e := range entries {
				t.row(short(e.CommitMeta.Hash), author(&e.CommitMeta), commitDate(&e.CommitMeta), firstLine(e.CommitMeta.Message))
			}
			return t.flush()
		}),
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&oneline, "oneline", false, "one short line per commit: hash and subject")
	fl.BoolVar(&graph, "graph", false, "follow every parent and draw the history as a graph")
	fl.IntVarP(&max, "max-count", "n", 0, "show at most N commits (0: all)")
	return cmd
}

// firstParentLog reads up to max commits (all when max is 0) of ref's
// first-parent history.
func firstParentLog(ctx context.Context, cl *nessieclient.Client, ref string, max int) ([]nessieclient.LogEntry, error) {
	var out []nessieclient.LogEntry
	token := ""
	for {
		n := logPage
		if max > 0 && max-len(out) < n {
			n = max - len(out)
		}
		page, err := cl.Log(ctx, ref, n, token, false)
		if err != nil {
			return nil, err
		}
		out = append(out, page.LogEntries...)
		if max > 0 && len(out) >= max {
			return out[:max], nil
		}
		if !page.HasMore || page.Token == "" {
			return out, nil
		}
		token = page.Token
	}
}

// graphHistory reads every commit reachable from ref, through all
// parents, and orders it for drawing: each commit after all its children,
// and a merged branch's commits together right after the merge, as git's
// --topo-order does. With max > 0 it returns the first max commits.
//
// The server's log follows first parents only, so each merge's other
// parents are read as their own first-parent chains, each stopping at the
// first commit already read. A chain is read at most max commits deep:
// a commit deeper than that has max descendants shown before it.
func graphHistory(ctx context.Context, cl *nessieclient.Client, ref string, max int) ([]nessieclient.LogEntry, error) {
	byHash := map[string]*nessieclient.LogEntry{}
	var head string
	chains := []string{ref}
	for len(chains) > 0 {
		start := chains[0]
		chains = chains[1:]
		token, read := "", 0
	chain:
		for {
			page, err := cl.Log(ctx, start, logPage, token, true)
			if err != nil {
				return nil, err
			}
			for i := range page.LogEntries {
				e := &page.LogEntries[i]
				h := e.CommitMeta.Hash
				if byHash[h] != nil {
					break chain
				}
				byHash[h] = e
				if head == "" {
					head = h
				}
				for _, p := range e.Parents()[min(1, len(e.Parents())):] {
					if byHash[p] == nil {
						chains = append(chains, "@"+p)
					}
				}
				if read++; max > 0 && read >= max {
					break chain
				}
			}
			if !page.HasMore || page.Token == "" {
				break
			}
			token = page.Token
		}
	}
	if head == "" {
		return nil, nil
	}

	// Kahn's algorithm with a stack: a commit is ready once all its
	// children are out; pushing the first parent first pops the merged
	// branch's commits first.
	children := map[string]int{}
	for _, e := range byHash {
		for _, p := range uniq(e.Parents()) {
			if byHash[p] != nil {
				children[p]++
			}
		}
	}
	var out []nessieclient.LogEntry
	stack := []string{head}
	for len(stack) > 0 && (max <= 0 || len(out) < max) {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := byHash[h]
		out = append(out, *e)
		for _, p := range uniq(e.Parents()) {
			if byHash[p] == nil {
				continue
			}
			if children[p]--; children[p] == 0 {
				stack = append(stack, p)
			}
		}
	}
	return out, nil
}

func uniq(hs []string) []string {
	var out []string
	for _, h := range hs {
		dup := false
		for _, o := range out {
			dup = dup || o == h
		}
		if !dup {
			out = append(out, h)
		}
	}
	return out
}

// printGraph draws entries, ordered by graphHistory, with their lanes. A
// root commit's parent is noAncestor, the hash of the empty history, which
// is no lane.
func printGraph(out io.Writer, entries []nessieclient.LogEntry, noAncestor string, oneline bool) error {
	commits := make([]graphCommit, len(entries))
	for i, e := range entries {
		commits[i] = graphCommit{Hash: e.CommitMeta.Hash}
		for _, p := range uniq(e.Parents()) {
			if p != noAncestor && strings.Trim(p, "0") != "" {
				commits[i].Parents = append(commits[i].Parents, p)
			}
		}
	}
	for _, l := range layoutGraph(commits) {
		if l.Commit < 0 {
			fmt.Fprintln(out, l.Graph)
			continue
		}
		m := &entries[l.Commit].CommitMeta
		text := short(m.Hash) + " " + firstLine(m.Message)
		if !oneline {
			text = short(m.Hash) + "  " + author(m) + "  " + commitDate(m) + "  " + firstLine(m.Message)
		}
		if _, err := fmt.Fprintln(out, l.Graph+" "+text); err != nil {
			return err
		}
	}
	return nil
}

func author(m *nessieclient.CommitMeta) string {
	switch {
	case m.Author != "":
		return m.Author
	case len(m.Authors) > 0:
		return m.Authors[0]
	case m.Committer != "":
		return m.Committer
	}
	return "-"
}

func commitDate(m *nessieclient.CommitMeta) string {
	t := m.AuthorTime
	if t == nil || t.IsZero() {
		t = m.CommitTime
	}
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

// logRefName names the reference of `floe log` in messages.
func logRefName(ref string) string {
	if ref == "-" {
		return "the default branch"
	}
	return ref
}
