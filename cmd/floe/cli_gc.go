package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/internal/floeclient"
)

func newGCCommand() *cobra.Command {
	f := &clientFlags{}
	var req floeclient.GCRequest
	var verbose bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete warehouse files no live reference reaches (--dry-run: say what would go)",
		Long: "Garbage collection: marks every file a table or view reaches on a live\n" +
			"branch or tag (within each reference's history retention), then deletes\n" +
			"the warehouse files nothing marked that are older than the grace period\n" +
			"(the server's, 3 days unless configured). --dry-run deletes nothing and\n" +
			"prints what a run would delete, per table; --explain LOCATION says why a\n" +
			"file is live or not. `floe gc report` prints the last run's report.",
		Args: cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			if grace > 0 {
				req.Grace = grace.String()
			}
			if verbose && req.ListFiles == 0 {
				req.ListFiles = 1000
			}
			rep, err := cl.GC(ctx, req)
			if err != nil {
				return fmt.Errorf("gc: %w", err)
			}
			if err := printGCReport(out, rep, f.json); err != nil {
				return err
			}
			if rep.Outcome != gc.OutcomeOK {
				return fmt.Errorf("gc %s: %s", rep.Outcome, rep.Error)
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&req.DryRun, "dry-run", false, "delete nothing; report what would be deleted")
	fl.DurationVar(&grace, "grace", 0, "grace period for this run instead of the server's: unreferenced files younger than this are kept (never shorter than the longest write)")
	fl.StringArrayVar(&req.Explain, "explain", nil, "say why the file at LOCATION is live or not (repeatable)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "list the files deleted (or to delete), up to 1000, with the reason")
	fl.IntVar(&req.ListFiles, "list-files", 0, "list up to this many files deleted (or to delete)")
	f.register(cmd)

	report := &cobra.Command{
		Use:   "report",
		Short: "Print the last garbage collection's report",
		Args:  cobra.NoArgs,
		RunE: f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, _ []string) error {
			rep, err := cl.LastGC(ctx)
			if err != nil {
				return fmt.Errorf("gc report: %w", err)
			}
			return printGCReport(out, rep, f.json)
		}),
	}
	cmd.AddCommand(report)
	return cmd
}

func printGCReport(out io.Writer, rep *gc.Report, asJSON bool) error {
	if asJSON {
		return writeJSON(out, rep)
	}
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(out, "gc %s (%s) by %s: %s in %.1fs, grace %s\n", rep.ID, map[bool]string{true: "dry run", false: "run"}[rep.DryRun],
		rep.Principal, rep.Outcome, rep.DurationSeconds, rep.Grace)
	if rep.Error != "" {
		fmt.Fprintf(out, "error: %s\n", rep.Error)
	}
	fmt.Fprintf(out, "marked: %d refs, %d commits, %d tables and views, %d metadata files, %d manifest lists, %d manifests read\n",
		rep.Refs, rep.Commits, rep.Contents, rep.MetadataFilesRead, rep.ManifestListsRead, rep.ManifestsRead)
	fmt.Fprintf(out, "listed %d files (%s): %d live (%s), %d kept within grace (%s), %d kept under tables with missing files; %s %d (%s)",
		rep.Listed, bytesIEC(rep.ListedBytes), rep.Live, bytesIEC(rep.LiveBytes), rep.Young, bytesIEC(rep.YoungBytes), rep.Protected,
		verb, rep.Deleted, bytesIEC(rep.DeletedBytes))
	if rep.DeleteErrors > 0 {
		fmt.Fprintf(out, ", %d failed", rep.DeleteErrors)
	}
	fmt.Fprintln(out)
	if len(rep.Tables) > 0 {
		t := newTable(out, "TABLE", "FILES", "BYTES", "KEPT")
		for _, ts := range rep.Tables {
			t.row(ts.Table, fmt.Sprint(ts.Files), bytesIEC(ts.Bytes), fmt.Sprint(ts.KeptFiles))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	for _, fv := range rep.Files {
		fmt.Fprintf(out, "%s %s (%s, %s): %s\n", fv.Verdict, fv.Location, fv.Table, bytesIEC(fv.Size), fv.Reason)
	}
	for _, fv := range rep.Explained {
		fmt.Fprintf(out, "%s: %s: %s\n", fv.Location, fv.Verdict, fv.Reason)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	return nil
}

// bytesIEC prints a byte count for people.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
