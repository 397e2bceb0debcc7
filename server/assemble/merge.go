package assemble

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/versionstore"
)

// The merge layer reads and writes table metadata through the same
// warehouses as the Iceberg REST facade (API.Warehouses): one file IO and
// S3 client per warehouse, and one metadata cache, whose budget
// (--metadata-cache-bytes) therefore bounds them all.

// newClassifier classifies the tables of dry-run merges.
func newClassifier(whs icebergtable.Warehouses) *classify.Classifier {
	return classify.New(whs...)
}

// newMergeEngine builds the merge engine the Nessie API's merges and
// transplants and floe's merge plans go through.
func newMergeEngine(cfg Config, tp trace.TracerProvider, store *versionstore.Store, whs icebergtable.Warehouses, logger *slog.Logger) (*mergeengine.Engine, error) {
	return mergeengine.New(mergeengine.Options{Store: store, Warehouses: whs,
		DefaultOverlap: mergeengine.OverlapRule(cfg.MergePartitionOverlap), Logger: logger, TracerProvider: tp})
}

// floePlanner gives floe's API the engine's dry runs in its own terms.
type floePlanner struct{ e *mergeengine.Engine }

func (m floePlanner) PlanMerge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, []floeapi.PlannedTable, error) {
	req.DryRun = true
	res, err := m.e.MergeTables(ctx, req)
	if res == nil {
		return nil, nil, err
	}
	out := make([]floeapi.PlannedTable, 0, len(res.Tables))
	for _, t := range res.Tables {
		out = append(out, floeapi.PlannedTable{Key: t.Key, Classification: t.Classification, Merged: t.Merged, Picked: len(t.Picked), Reason: t.Reason})
	}
	ds, derr := m.e.Discards(ctx, req, res.MergeResult)
	if derr != nil {
		return nil, nil, derr
	}
	for _, d := range ds {
		out = append(out, floeapi.PlannedTable{Key: d.Key, Merged: true, Reason: forcedReason(d), Discard: &d})
	}
	return res.MergeResult, out, err
}

// forcedReason is what a merge does with a table it takes whole from the
// source (FORCE) although the target changed it.
func forcedReason(d classify.Discard) string {
	return "force: takes the source's version of the table whole and " + d.Summary
}

// nessieMerger gives the Nessie API the engine's outcomes in its own
// terms (the API does not import the engine).
type nessieMerger struct{ e *mergeengine.Engine }

func (m nessieMerger) MergeTables(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, []nessie.TableOutcome, error) {
	res, err := m.e.MergeTables(ctx, req)
	if res == nil {
		return nil, nil, err
	}
	outs := nessieOutcomes(res.Tables)
	if req.DryRun {
		// A dry run also says what FORCE would throw away of the target.
		ds, derr := m.e.Discards(ctx, req, res.MergeResult)
		if derr != nil {
			return nil, nil, derr
		}
		for _, d := range ds {
			outs = append(outs, nessie.TableOutcome{Key: d.Key, Merged: true, Reason: forcedReason(d), Discard: &d})
		}
	}
	return res.MergeResult, outs, err
}

func (m nessieMerger) TransplantTables(ctx context.Context, req versionstore.TransplantRequest) (*versionstore.MergeResult, []nessie.TableOutcome, error) {
	res, err := m.e.TransplantTables(ctx, req)
	if res == nil {
		return nil, nil, err
	}
	return res.MergeResult, nessieOutcomes(res.Tables), err
}

func nessieOutcomes(ts []mergeengine.TableOutcome) []nessie.TableOutcome {
	out := make([]nessie.TableOutcome, 0, len(ts))
	for _, t := range ts {
		out = append(out, nessie.TableOutcome{Key: t.Key, Classification: t.Classification, Merged: t.Merged, Reason: t.Reason, Picked: len(t.Picked)})
	}
	return out
}
