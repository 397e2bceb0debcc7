package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

// FORCE takes the source's version of a key whole. For an Iceberg table
// the target changed since the merge base that throws the target's
// snapshots, files and rows away, which Nessie's clients accept silently;
// floe merge does not: before a merge with FORCE it asks the server's dry
// run what would be discarded (the server decides it: classify.Discard),
// and goes on only with --discard-target-changes or a "y" typed on a
// terminal.

// forces reports whether req merges any key with FORCE.
func forces(req nessieclient.MergeRequest) bool {
	if req.DefaultKeyMergeMode == "FORCE" {
		return true
	}
	for _, km := range req.KeyMergeModes {
		if km.MergeBehavior == "FORCE" {
			return true
		}
	}
	return false
}

// discards are the forced tables of a dry run that the target changed.
func discards(res *nessieclient.MergeResponse) []*nessieclient.Discard {
	var out []*nessieclient.Discard
	for _, d := range res.Details {
		if m := d.FloeMerge; m != nil && m.Action == "force" && m.Discards != nil {
			if len(m.Discards.Key) == 0 {
				m.Discards.Key = d.Key.Elements
			}
			out = append(out, m.Discards)
		}
	}
	return out
}

// confirmForce runs req as a dry run and, if FORCE would discard changes
// the target made to a table since the merge base, returns nil only when
// allowed (--discard-target-changes) or confirmed on a terminal (in, when
// it is one, with the question and the discards on out); otherwise an
// error naming each table and what would be lost. When it goes on, each
// such key of req is pinned to the content the dry run saw on the target
// (pinForced): what is discarded is what was shown.
func confirmForce(ctx context.Context, cl *nessieclient.Client, in io.Reader, out io.Writer, allowed bool,
	source string, target *nessieclient.Reference, req *nessieclient.MergeRequest) error {
	dry := *req
	dry.DryRun, dry.ReturnConflictAsResult, dry.Classify = true, true, true
	res, err := cl.Merge(ctx, target.Name, target.Hash, dry)
	if err != nil {
		return fmt.Errorf("merge %s into %s: dry run before FORCE: %w", source, target.Name, err)
	}
	ds := discards(res)
	if len(ds) == 0 {
		return nil // FORCE loses nothing of the target
	}
	if allowed {
		return pinForced(ctx, cl, target, req, ds)
	}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		printDiscards(out, target.Name, ds)
		fmt.Fprintf(out, "Discard these changes of %s? [y/N] ", target.Name)
		line, _ := bufio.NewReader(in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
			return pinForced(ctx, cl, target, req, ds)
		}
		return fmt.Errorf("merge %s into %s: not done: FORCE would discard %s's changes, and they were not confirmed", source, target.Name, target.Name)
	}
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, nessieclient.ContentKey{Elements: d.Key}.String()+": "+d.Summary)
	}
	return fmt.Errorf("merge %s into %s: not done: FORCE would discard what %s changed since the merge base: %s; "+
		"take %s into %s first and merge again, or pass --discard-target-changes to discard it",
		source, target.Name, target.Name, strings.Join(parts, "; "), target.Name, source)
}

// pinForced makes each key whose discards were reported a FORCE that
// expects the target's content the dry run read (at target.Hash): if the
// target changes the table before the merge is made, the merge conflicts
// instead of discarding more than was shown. A table the target dropped
// has no content to expect.
func pinForced(ctx context.Context, cl *nessieclient.Client, target *nessieclient.Reference, req *nessieclient.MergeRequest, ds []*nessieclient.Discard) error {
	for _, d := range ds {
		if d.TargetDropped {
			continue
		}
		key := nessieclient.ContentKey{Elements: d.Key}
		c, err := cl.Content(ctx, target.Name+"@"+target.Hash, key)
		if err != nil {
			return fmt.Errorf("read %s on %s: %w", key, target.Name, err)
		}
		req.KeyMergeModes = slices.DeleteFunc(req.KeyMergeModes, func(km nessieclient.KeyMergeMode) bool {
			return slices.Equal(km.Key.Elements, key.Elements)
		})
		req.KeyMergeModes = append(req.KeyMergeModes, nessieclient.KeyMergeMode{Key: key, MergeBehavior: "FORCE", ExpectedTargetContent: c.Content})
	}
	return nil
}

// printDiscards lists, per forced table, what the merge throws away of the
// target: the summary, each snapshot, and the files and rows.
func printDiscards(out io.Writer, target string, ds []*nessieclient.Discard) {
	fmt.Fprintf(out, "\nFORCE discards what %s changed since the merge base:\n", target)
	for _, d := range ds {
		fmt.Fprintf(out, "%s: %s\n", nessieclient.ContentKey{Elements: d.Key}.String(), d.Summary)
		for _, s := range d.Snapshots {
			fmt.Fprintf(out, "  snapshot %d %s\n", s.SnapshotID, s.Operation)
		}
		if d.Unreadable == "" && d.Diverged == "" && !d.TargetDropped {
			fmt.Fprintf(out, "  data files %s; delete files %s\n", fileCounts(d.DataFiles, true), fileCounts(d.DeleteFiles, true))
		}
	}
}
