package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// The report's document lives in internal/apidoc, which the CLI's client
// shares without importing the collector.
type (
	Report       = apidoc.GCReport
	TableSummary = apidoc.GCTableSummary
	FileVerdict  = apidoc.GCFileVerdict
)

// Outcomes of a run.
const (
	OutcomeOK       = apidoc.GCOutcomeOK
	OutcomeError    = apidoc.GCOutcomeError
	OutcomeCanceled = apidoc.GCOutcomeCanceled
)

// Verdicts on one file (apidoc documents each).
const (
	VerdictLive     = apidoc.GCVerdictLive
	VerdictDelete   = apidoc.GCVerdictDelete
	VerdictKept     = apidoc.GCVerdictKept
	VerdictNotFound = apidoc.GCVerdictNotFound
)

// maxWarnings bounds the warnings a report carries.
const maxWarnings = 100

// reportRecord is the store record holding the last run's report.
const reportRecord = "floe.gc.last-report"

// ErrNoReport is returned by LastReport before the first run.
var ErrNoReport = errors.New("no garbage collection has run yet")

func (c *Collector) saveReport(ctx context.Context, rep *Report) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	rec := versionstore.Record{Key: reportRecord, Value: b}
	if rep.DryRun {
		err = c.opts.Store.PutRecord(ctx, rec)
	} else {
		// A run that deleted (or tried to) is an event of the change
		// feed, written with its report in one durable write: the feed
		// shows a run exactly when its report was kept.
		var ev versionstore.LogEvent
		if ev, err = feedevent.GCEvent(rep.Principal, feedevent.GCRun{
			ID: rep.ID, Started: rep.Started, Finished: rep.Finished, Outcome: rep.Outcome, Error: rep.Error,
			Refs: rep.Refs, Live: rep.Live, Deleted: rep.Deleted, DeletedBytes: rep.DeletedBytes, DeleteErrors: rep.DeleteErrors,
		}); err == nil {
			_, err = c.opts.Store.AppendEvent(ctx, ev, rec)
		}
	}
	if err != nil {
		return fmt.Errorf("store record %s: %w", reportRecord, err)
	}
	if c.opts.ReportFile != "" && !rep.DryRun {
		if err := writeFileAtomic(c.opts.ReportFile, b); err != nil {
			return fmt.Errorf("report file: %w", err)
		}
	}
	return nil
}

// LastReport returns the last run's report, dry or not.
func (c *Collector) LastReport(ctx context.Context) (*Report, error) {
	r, err := c.opts.Store.GetRecord(ctx, reportRecord)
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, ErrNoReport
	}
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(r.Value, &rep); err != nil {
		return nil, fmt.Errorf("decode the last gc report: %w", err)
	}
	return &rep, nil
}

func writeFileAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
