package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

// mergeFlags are what merge and transplant share: the target branch and
// how keys are merged.
type mergeFlags struct {
	into        string
	dryRun      bool
	modes       []string
	defaultMode string
	message     string
	// discardTarget allows a FORCE that discards the target's changes
	// (cli_force.go).
	discardTarget bool
}

func (m *mergeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&m.into, "into", "", "branch to change (default: the server's default branch)")
	fl.BoolVar(&m.dryRun, "dry-run", false, "report what would happen without changing the branch")
	fl.StringArrayVar(&m.modes, "mode", nil, "merge behavior of one key, KEY=NORMAL|FORCE|DROP (repeatable)")
	fl.StringVar(&m.defaultMode, "default-mode", "", "merge behavior of the other keys: NORMAL, FORCE or DROP")
}

func mergeBehavior(s string) (string, error) {
	switch b := strings.ToUpper(s); b {
	case "NORMAL", "FORCE", "DROP":
		return b, nil
	default:
		return "", fmt.Errorf("merge behavior %q: want NORMAL, FORCE or DROP", s)
	}
}

// request fills the key modes and default mode of req.
func (m *mergeFlags) request(req *nessieclient.MergeRequest) error {
	if m.defaultMode != "" {
		b, err := mergeBehavior(m.defaultMode)
		if err != nil {
			return err
		}
		req.DefaultKeyMergeMode = b
	}
	for _, s := range m.modes {
		i := strings.LastIndexByte(s, '=')
		if i <= 0 {
			return fmt.Errorf("--mode %q: want KEY=NORMAL|FORCE|DROP", s)
		}
		k, err := parseKey(s[:i])
		if err != nil {
			return fmt.Errorf("--mode %q: %w", s, err)
		}
		b, err := mergeBehavior(s[i+1:])
		if err != nil {
			return fmt.Errorf("--mode %q: %w", s, err)
		}
		req.KeyMergeModes = append(req.KeyMergeModes, nessieclient.KeyMergeMode{Key: k, MergeBehavior: b})
	}
	req.DryRun = m.dryRun
	req.Message = m.message
	return nil
}

// target reads the branch to change and its current hash, the expected
// hash of the write.
func (m *mergeFlags) target(ctx context.Context, cl *nessieclient.Client) (*nessieclient.Reference, error) {
	name := m.into
	if name == "" {
		var err error
		if name, err = defaultBranch(ctx, cl); err != nil {
			return nil, err
		}
	}
	return currentRef(ctx, cl, name, nessieclient.Branch)
}

func newMergeCommand() *cobra.Command {
	f := &clientFlags{}
	m := &mergeFlags{}
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "merge SRC",
		Short: "Merge a reference into a branch",
		Long: "Merge the commits of SRC (a branch, tag, name@hash or @hash) that the target\n" +
			"branch lacks into it. An Iceberg table changed on both sides is merged by\n" +
			"cherry-picking SRC's snapshots onto the target's when they touch other\n" +
			"partitions (or the same ones, as the table's floe.merge.partition-overlap\n" +
			"allows); other conflicting keys fail the merge, listed with their conflict\n" +
			"type and floe's reason, unless --mode or --default-mode says to FORCE or DROP them.\n" +
			"With --dry-run, nothing is written and the report is what the merge would\n" +
			"do: each Iceberg table changed on both sides is classified (disjoint,\n" +
			"partition-overlap, file-conflict, structural) with the partitions and files\n" +
			"each side touched, and what the merge does with it (cherry-pick N snapshots,\n" +
			"or refuse and why); the dry run fails when the merge would.\n" +
			"FORCE on a table the target changed since the merge base discards the\n" +
			"target's snapshots, files and rows; the dry run lists them, and the merge\n" +
			"runs only with --discard-target-changes or when confirmed on a terminal.",
		Args: cobra.ExactArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			var req nessieclient.MergeRequest
			if err := m.request(&req); err != nil {
				return err
			}
			src, err := cl.Resolve(ctx, args[0])
			if err != nil {
				return fmt.Errorf("resolve %s: %w", args[0], err)
			}
			req.FromRefName, req.FromHash = src.Name, src.Hash
			target, err := m.target(ctx, cl)
			if err != nil {
				return err
			}
			if forces(req) && !m.dryRun {
				if err := confirmForce(ctx, cl, cmd.InOrStdin(), cmd.ErrOrStderr(), m.discardTarget, args[0], target, &req); err != nil {
					return err
				}
			}
			// A dry run shows what the merge would do, floe's
			// classification of each table changed on both sides included,
			// and fails when the real merge would.
			req.ReturnConflictAsResult, req.Classify = m.dryRun, m.dryRun
			res, err := cl.Merge(ctx, target.Name, target.Hash, req)
			if err != nil {
				return fmt.Errorf("merge %s into %s: %w", args[0], target.Name, err)
			}
			what := "merge " + args[0] + " into " + target.Name
			if err := printMerge(out, f.json, m.dryRun, what, target, res); err != nil {
				return err
			}
			if !res.WasSuccessful {
				return fmt.Errorf("%s would fail (REFERENCE_CONFLICT): %s", what, conflictList(res))
			}
			return nil
		}),
	}
	f.register(cmd)
	m.register(cmd)
	cmd.Flags().StringVarP(&m.message, "message", "m", "", "message of the merge commit")
	cmd.Flags().BoolVar(&m.discardTarget, "discard-target-changes", false,
		"with FORCE, discard what the target changed in the forced tables since the merge base (without it, floe asks on a terminal or refuses)")
	return cmd
}

func newTransplantCommand() *cobra.Command {
	f := &clientFlags{}
	m := &mergeFlags{}
	var from string
	cmd := &cobra.Command{
		Use:   "transplant HASH... --into BRANCH",
		Short: "Copy commits onto a branch",
		Long: "Apply the changes of the given commits, oldest first, onto BRANCH as new\n" +
			"commits. Hashes may be abbreviated to 8 or more digits. An Iceberg table\n" +
			"BRANCH changed too is merged by cherry-picking the commit's snapshots, as\n" +
			"floe merge does; one whose snapshots BRANCH already has is left as it is.",
		Args: cobra.MinimumNArgs(1),
		RunE: f.run(func(ctx context.Context, cl *nessieclient.Client, out io.Writer, args []string) error {
			req := nessieclient.MergeRequest{FromRefName: from, HashesToTransplant: args}
			if err := m.request(&req); err != nil {
				return err
			}
			// A dry run shows what would happen to each Iceberg table
			// the target changed too.
			req.Classify = m.dryRun
			target, err := m.target(ctx, cl)
			if err != nil {
				return err
			}
			res, err := cl.Transplant(ctx, target.Name, target.Hash, req)
			if err != nil {
				return fmt.Errorf("transplant onto %s: %w", target.Name, err)
			}
			what := fmt.Sprintf("transplant %d commit(s) onto %s", len(args), target.Name)
			return printMerge(out, f.json, m.dryRun, what, target, res)
		}),
	}
	f.register(cmd)
	m.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "reference the commits come from")
	return cmd
}

// printMerge reports a merge or transplant: what happened to the branch,
// then the keys it touched and how.
func printMerge(out io.Writer, asJSON, dryRun bool, what string, target *nessieclient.Reference, res *nessieclient.MergeResponse) error {
	if asJSON {
		return writeJSON(out, res)
	}
	switch {
	case !res.WasSuccessful:
		fmt.Fprintf(out, "Would fail: %s\n", what)
	case dryRun:
		fmt.Fprintf(out, "Dry run: %s would succeed\n", what)
	case !res.WasApplied:
		fmt.Fprintf(out, "Nothing to do: %s; %s stays at %s\n", what, target.Name, short(target.Hash))
	default:
		fmt.Fprintf(out, "Done: %s; %s is now at %s (was %s)\n", what, target.Name, short(res.ResultantTargetHash), short(target.Hash))
	}
	if len(res.Details) == 0 {
		return nil
	}
	t := newTable(out, "KEY", "MERGE-BEHAVIOR", "CONFLICT")
	for _, d := range res.Details {
		conflict := ""
		if d.Conflict != nil {
			conflict = d.Conflict.ConflictType
		}
		t.row(d.Key.String(), d.MergeBehavior, conflict)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := printClassifications(out, res); err != nil {
		return err
	}
	if ds := discards(res); len(ds) > 0 {
		printDiscards(out, target.Name, ds)
	}
	return nil
}

// conflictList names each conflicting key with its conflict type.
func conflictList(res *nessieclient.MergeResponse) string {
	var parts []string
	for _, d := range res.Details {
		if d.Conflict != nil {
			parts = append(parts, d.Key.String()+" "+d.Conflict.ConflictType)
		}
	}
	return "conflicts: " + strings.Join(parts, ", ")
}

// printClassifications shows floe's classification of the tables changed
// on both sides: per table and side, the snapshots added, the partitions
// touched and the files added and removed; then why each table is in its
// class.
func printClassifications(out io.Writer, res *nessieclient.MergeResponse) error {
	var cs []*nessieclient.Classification
	merges := map[string]*nessieclient.TableMerge{}
	for _, d := range res.Details {
		if d.FloeClassification != nil {
			cs = append(cs, d.FloeClassification)
			merges[d.Key.String()] = d.FloeMerge
		}
	}
	if len(cs) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nTables changed on both sides:")
	t := newTable(out, "TABLE", "CLASS", "SIDE", "SNAPSHOTS", "PARTITIONS", "DATA-FILES", "DELETE-FILES")
	for _, c := range cs {
		name := nessieclient.ContentKey{Elements: c.Key}.String()
		for i, side := range []struct {
			name string
			s    nessieclient.ClassificationSide
		}{{"source", c.Source}, {"target", c.Target}} {
			tbl, class := name, c.Class
			if i > 0 {
				tbl, class = "", ""
			}
			t.row(tbl, class, side.name, snapshotOps(side.s), partitionNames(side.s.Partitions),
				fileCounts(side.s.DataFiles, true), fileCounts(side.s.DeleteFiles, false))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, c := range cs {
		name := nessieclient.ContentKey{Elements: c.Key}.String()
		fmt.Fprintf(out, "%s: %s: %s\n", name, c.Class, c.Reason)
		if m := merges[name]; m != nil {
			fmt.Fprintf(out, "  %s\n", mergeAction(m))
		}
	}
	return nil
}

// mergeAction says what the merge does with a table, in words.
func mergeAction(m *nessieclient.TableMerge) string {
	switch m.Action {
	case "cherry-pick":
		return fmt.Sprintf("merge: cherry-pick %d snapshot(s) of the source onto the target", m.Snapshots)
	case "already-merged":
		return "merge: nothing to pick (every snapshot of the source is on the target)"
	default:
		return "merge: refuse: " + m.Reason
	}
}

// snapshotOps summarizes a side's snapshots: "2 (append, overwrite)".
func snapshotOps(s nessieclient.ClassificationSide) string {
	if !s.Changed {
		return "unchanged"
	}
	seen := map[string]bool{}
	var ops []string
	for _, sn := range s.Snapshots {
		if !seen[sn.Operation] {
			seen[sn.Operation] = true
			ops = append(ops, sn.Operation)
		}
	}
	if len(ops) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(s.Snapshots), strings.Join(ops, ", "))
}

func partitionNames(ps []nessieclient.TablePartition) string {
	const shown = 3
	var names []string
	for i, p := range ps {
		if i == shown {
			names = append(names, fmt.Sprintf("+%d more", len(ps)-shown))
			break
		}
		n := p.Path
		if n == "" {
			n = "(unpartitioned)"
		}
		if p.SpecID != 0 {
			n += fmt.Sprintf("[spec %d]", p.SpecID)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, " ")
}

// fileCounts renders "+2 (5 rows) -1 (2 rows)"; rows only for data files.
func fileCounts(f nessieclient.FileChangeCounts, rows bool) string {
	if !rows {
		return fmt.Sprintf("+%d -%d", f.AddedCount, f.RemovedCount)
	}
	return fmt.Sprintf("+%d (%d rows) -%d (%d rows)", f.AddedCount, f.AddedRecords, f.RemovedCount, f.RemovedRecords)
}
