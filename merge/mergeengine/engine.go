package mergeengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// PropPartitionOverlap is the table property that says what a merge does
// with a table both sides changed in the same partitions: OverlapAllow,
// OverlapCheck or OverlapRefuse. The target's value rules: it is the table
// the merge writes. Without it the engine's default applies.
const PropPartitionOverlap = "floe.merge.partition-overlap"

// OverlapRule is a value of PropPartitionOverlap.
type OverlapRule string

const (
	// OverlapAllow cherry-picks the source's snapshots whatever they add
	// to the partitions both sides touched.
	OverlapAllow OverlapRule = "allow"
	// OverlapCheck cherry-picks them unless the merged table would hold
	// two rows with the same identifier key in a partition both sides
	// touched (read from the data files of those partitions). A table
	// without identifier fields has no key to check: check is allow.
	OverlapCheck OverlapRule = "check"
	// OverlapRefuse refuses the merge of such a table.
	OverlapRefuse OverlapRule = "refuse"
)

// DefaultOverlapRule is the catalog default when Options leave it unset.
const DefaultOverlapRule = OverlapCheck

// ParseOverlapRule checks a rule's spelling ("" is the default).
func ParseOverlapRule(s string) (OverlapRule, error) {
	switch r := OverlapRule(strings.ToLower(strings.TrimSpace(s))); r {
	case "":
		return DefaultOverlapRule, nil
	case OverlapAllow, OverlapCheck, OverlapRefuse:
		return r, nil
	}
	return "", fmt.Errorf("unknown partition-overlap rule %q (allow, check or refuse)", s)
}

// Store is what the engine needs of the version store.
type Store interface {
	Merge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, error)
	Transplant(ctx context.Context, req versionstore.TransplantRequest) (*versionstore.MergeResult, error)
	GetContents(ctx context.Context, at versionstore.Hash, keys []versionstore.ContentKey) (map[string]*versionstore.Content, error)
	ReadCommit(ctx context.Context, h versionstore.Hash) (*versionstore.Commit, error)
}

// Options configure an Engine.
type Options struct {
	Store Store
	// Warehouses hold the tables' files; a metadata location is read and
	// written through the innermost warehouse that holds it.
	Warehouses []*icebergtable.Warehouse
	// DefaultOverlap is the rule for tables without PropPartitionOverlap;
	// "" is DefaultOverlapRule.
	DefaultOverlap OverlapRule
	Logger         *slog.Logger
	// TracerProvider traces each merge or transplant and its stages
	// (attempts, each table's classification and cherry-pick, the
	// commit) as spans of the caller's trace; nil records nothing.
	TracerProvider trace.TracerProvider
}

// Engine merges catalog branches, Iceberg tables included. It holds no
// state between calls and is safe for concurrent use.
type Engine struct {
	store      Store
	warehouses []*icebergtable.Warehouse
	classifier *classify.Classifier
	overlap    OverlapRule
	logger     *slog.Logger
	tracer     trace.Tracer // see tracing.go
}

// New returns an engine over o's store and warehouses.
func New(o Options) (*Engine, error) {
	if o.Store == nil {
		return nil, errors.New("merge engine: no version store")
	}
	rule, err := ParseOverlapRule(string(o.DefaultOverlap))
	if err != nil {
		return nil, fmt.Errorf("merge engine: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{store: o.Store, warehouses: o.Warehouses, classifier: classify.New(o.Warehouses...), overlap: rule, logger: logger,
		tracer: tracerOf(o.TracerProvider)}, nil
}

// RefusedError is a merge refused because of what it would do to one or
// more tables. Nothing was written. It unwraps to the store's conflict
// error, whose conflicts carry the reasons, so callers that report
// conflicts report it unchanged.
type RefusedError struct {
	Conflict *versionstore.ConflictError
	Tables   []TableOutcome // the refused tables
}

func (e *RefusedError) Error() string {
	parts := make([]string, 0, len(e.Tables))
	for _, t := range e.Tables {
		parts = append(parts, t.Key.String()+": "+t.Reason)
	}
	return "merge refused: " + strings.Join(parts, "; ")
}

func (e *RefusedError) Unwrap() error { return e.Conflict }

// TableOutcome says what the merge did, or would not do, with one table
// both sides changed.
type TableOutcome struct {
	Key            versionstore.ContentKey
	Classification *classify.Table
	Merged         bool   // the source's snapshots are on the target's head
	Reason         string // why it was refused, or what was merged
	// Resolution is what was done with a merged table; "" if refused.
	Resolution classify.Resolution
	// Picked are the snapshots written on the target, oldest first.
	Picked []table.Snapshot
}

// Result is a merge's outcome: the store's result, and what happened to
// each table the engine resolved.
type Result struct {
	*versionstore.MergeResult
	Tables []TableOutcome
}

// maxAttempts bounds how often a merge is planned again because the
// target's value of a resolved table changed between planning and commit.
const maxAttempts = 5

// Merge is MergeTables with the store's result only, the shape of the
// store's own Merge (what the Nessie API calls).
func (e *Engine) Merge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, error) {
	res, err := e.MergeTables(ctx, req)
	if res == nil {
		return nil, err
	}
	return res.MergeResult, err
}

// MergeTables merges req.From into req.Target. Keys that conflict only because
// both sides changed an Iceberg table (VALUE_DIFFERS, merge behavior
// NORMAL, no resolution given by the caller) are classified and, where
// allowed, resolved by cherry-picking the source's snapshots onto the
// target's head; the store then writes every key in one merge commit with
// two parents, after req.Check approved exactly those changes. Any refusal
// writes nothing. req.DryRun is honoured: a dry run plans and checks but
// writes neither files nor commits.
func (e *Engine) MergeTables(ctx context.Context, req versionstore.MergeRequest) (*Result, error) {
	return e.untilSettled(ctx, "merge", req.Target, func(ctx context.Context) (*Result, bool, error) { return e.attempt(ctx, req) })
}

// untilSettled runs attempt again while it says the target moved under a
// resolved table, at most maxAttempts times in all.
func (e *Engine) untilSettled(ctx context.Context, op, target string, attempt func(context.Context) (*Result, bool, error)) (_ *Result, err error) {
	ctx, span := e.startSpan(ctx, op, attribute.String("floe.target", target))
	defer func() { endSpan(span, err) }()
	for n := 1; ; n++ {
		actx, aspan := e.startSpan(ctx, op+" attempt", attribute.Int("floe.attempt", n))
		res, retry, err := attempt(actx)
		if aspan.IsRecording() {
			aspan.SetAttributes(attribute.Bool("floe.replan", retry), attribute.Int("floe.tables_resolved", len(resultTables(res))))
		}
		endSpan(aspan, err)
		if !retry || n >= maxAttempts {
			return res, err
		}
		e.logger.InfoContext(ctx, op+": the target changed a resolved table while the "+op+" was committed; planning again",
			"target", target, "attempt", n, "err", err)
	}
}

// attempt merges once; retry says the target moved under a resolved
// table. It runs the caller's merge first, as it is: most merges have no
// table changed on both sides and are done then, planned once. Only a
// conflict the engine can resolve takes the engine's path, which merges
// again with the resolved tables. The store reports conflicts before it
// asks the check, so a conflicting merge is judged by the check (403) only
// once its resolution is known, on exactly what it writes, and one the
// engine cannot resolve fails with the store's conflict (409) as before.
func (e *Engine) attempt(ctx context.Context, req versionstore.MergeRequest) (*Result, bool, error) {
	res, err := e.store.Merge(ctx, req)
	var ce *versionstore.ConflictError
	if err == nil || res == nil || !errors.As(err, &ce) {
		return &Result{MergeResult: res}, false, err
	}
	keys, ok := e.resolvable(req, res)
	if !ok {
		return &Result{MergeResult: res}, false, err // conflicts the engine cannot resolve
	}
	contents, err := e.contentsAt(ctx, keys, res.CommonAncestor, req.From, res.EffectiveTargetHash)
	if err != nil {
		return &Result{MergeResult: res}, false, err
	}

	var w written
	outcomes, refused, modes, err := e.resolveAll(ctx, "merge", keys, req, &w,
		func(k versionstore.ContentKey) (base, src, tgt *versionstore.Content, err error) {
			enc := string(k.Encode())
			return contents[0][enc], contents[1][enc], contents[2][enc], nil
		})
	if err != nil {
		w.remove(ctx, e)
		return &Result{MergeResult: res}, false, err
	}
	return e.finish(ctx, req.DryRun, res, ce, keys, outcomes, refused, &w, func(ctx context.Context) (*versionstore.MergeResult, error) {
		final := req
		final.KeyModes = withResolved(req.KeyModes, modes)
		final.Meta.Properties = withOutcomes(req.Meta.Properties, outcomes)
		final.Check = w.check("merge", req.Target, final.Check)
		return e.store.Merge(ctx, final)
	})
}

// resolveAll decides every key with resolveTable, on the table before,
// in and opposite the change that contentsOf gives for it, and returns the
// outcomes, the refused ones, and a resolved key mode for each table
// merged; an error of contentsOf ends it. A table floe cannot read (a location outside the warehouses, a
// missing file) keeps its plain key conflict, with the reason: a merge of
// it by content is refused, never guessed. A storage fault (isFault) ends
// it with a *FaultError. op names the operation in logs.
func (e *Engine) resolveAll(ctx context.Context, op string, keys []versionstore.ContentKey, req versionstore.MergeRequest, w *written,
	contentsOf func(versionstore.ContentKey) (base, src, tgt *versionstore.Content, err error)) (outcomes, refused []TableOutcome, modes []versionstore.KeyMergeMode, err error) {
	for _, k := range keys {
		base, src, tgt, err := contentsOf(k)
		if err != nil {
			return nil, nil, nil, err // the store failed: no decision
		}
		tctx, span := e.startSpan(ctx, "resolve table", attribute.String("floe.table", k.String()))
		out, resolved, err := e.resolveTable(tctx, k, base, src, tgt, req, w)
		traceOutcome(span, out, err)
		if isFault(err) {
			// Not a decision about the table: the caller sees a fault,
			// never a refusal it would take as final.
			return nil, nil, nil, &FaultError{Op: op, Target: req.Target, Key: k, Err: err}
		}
		if err != nil {
			e.logger.WarnContext(ctx, op+": cannot merge a table changed on both sides by content", "key", k.String(), "err", err)
			out, resolved = &TableOutcome{Key: k, Reason: "cannot merge the table by content: " + err.Error()}, nil
		}
		outcomes = append(outcomes, *out)
		if !out.Merged {
			refused = append(refused, *out)
			continue
		}
		modes = append(modes, versionstore.KeyMergeMode{Key: k, Behavior: versionstore.MergeNormal, ExpectedTarget: tgt, Resolved: resolved})
	}
	return outcomes, refused, modes, nil
}

// finish ends an attempt whose tables were decided: with any refused,
// nothing is written (the files written for the others are removed) and
// the error is a *RefusedError; else commit writes every key. Files are
// removed unless commit wrote them into the store, and retry says the
// target moved under a resolved table.
func (e *Engine) finish(ctx context.Context, dryRun bool, res *versionstore.MergeResult, ce *versionstore.ConflictError, keys []versionstore.ContentKey,
	outcomes, refused []TableOutcome, w *written, commit func(context.Context) (*versionstore.MergeResult, error)) (*Result, bool, error) {
	if len(refused) > 0 {
		w.remove(ctx, e)
		annotate(res, ce, outcomes)
		return &Result{MergeResult: res, Tables: outcomes}, false, &RefusedError{Conflict: ce, Tables: refused}
	}
	cctx, span := e.startSpan(ctx, "commit resolved")
	cres, err := commit(cctx)
	endSpan(span, err)
	out := &Result{MergeResult: cres, Tables: outcomes}
	if err != nil || dryRun || cres == nil || !cres.WasApplied {
		w.remove(ctx, e)
	}
	target := ce.Ref
	if err != nil && errors.As(err, &ce) && touchesAny(ce, keys) {
		return out, true, err
	}
	if err != nil && errors.Is(err, versionstore.ErrInvalid) && namesAny(err, keys) {
		// Another merge of the same source landed between the plan and
		// its commit and moved the merge base past the source's change
		// of a table the engine resolved: the store, computing the merge
		// on the new base, finds that the source no longer puts the key
		// and refuses its resolution as unused. The caller asked nothing
		// invalid; the plan is stale, as with a moved target value.
		return out, true, &versionstore.ConflictError{Ref: target, Conflicts: []versionstore.Conflict{{Type: versionstore.ConflictUnexpectedHash,
			Message: fmt.Sprintf("%s changed under the merge while it was committed (another merge of the source moved the merge base): %v", target, err)}}}
	}
	return out, false, err
}

// namesAny reports whether the store's error is about one of keys: its
// messages quote a key's dotted name.
func namesAny(err error, keys []versionstore.ContentKey) bool {
	msg := err.Error()
	for _, k := range keys {
		if strings.Contains(msg, strconv.Quote(k.String())) {
			return true
		}
	}
	return false
}

// withOutcomes is props with the record of each table merged (see
// classify.PropClass): the merge commit says durably how each table both
// sides changed was merged. props is not modified.
func withOutcomes(props map[string]string, outcomes []TableOutcome) map[string]string {
	out := maps.Clone(props)
	for _, o := range outcomes {
		if !o.Merged || o.Classification == nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		name := o.Key.String()
		out[classify.PropClass+name] = string(o.Classification.Class)
		out[classify.PropResolution+name] = string(o.Resolution)
	}
	return out
}

// withResolved is the caller's key modes with the engine's resolutions: a
// plain NORMAL mode the caller gave for a key the engine resolved (as the
// merge queue does to merge a subset of tables) gives way to the
// resolution, since the store takes one mode per key.
func withResolved(given, resolved []versionstore.KeyMergeMode) []versionstore.KeyMergeMode {
	byEngine := make(map[string]bool, len(resolved))
	for _, km := range resolved {
		byEngine[string(km.Key.Encode())] = true
	}
	out := make([]versionstore.KeyMergeMode, 0, len(given)+len(resolved))
	for _, km := range given {
		if !byEngine[string(km.Key.Encode())] {
			out = append(out, km)
		}
	}
	return append(out, resolved...)
}

// resolvable returns the keys of res's conflicts the engine resolves, and
// false if some conflict is of another kind (then the merge fails as the
// store says).
func (e *Engine) resolvable(req versionstore.MergeRequest, res *versionstore.MergeResult) ([]versionstore.ContentKey, bool) {
	given := map[string]bool{}
	for _, km := range req.KeyModes {
		if km.Behavior != versionstore.MergeNormal || km.ExpectedTarget != nil || km.Resolved != nil {
			given[string(km.Key.Encode())] = true
		}
	}
	var keys []versionstore.ContentKey
	for _, d := range res.Details {
		if d.Conflict == nil {
			continue
		}
		if d.Conflict.Type != versionstore.ConflictValueDiffers || d.Behavior != versionstore.MergeNormal || given[string(d.Key.Encode())] {
			return nil, false
		}
		keys = append(keys, d.Key)
	}
	return keys, len(keys) > 0
}

// contentsAt reads keys at each of the commits.
func (e *Engine) contentsAt(ctx context.Context, keys []versionstore.ContentKey, at ...versionstore.Hash) ([]map[string]*versionstore.Content, error) {
	out := make([]map[string]*versionstore.Content, len(at))
	for i, h := range at {
		m, err := e.store.GetContents(ctx, h, keys)
		if err != nil {
			return nil, fmt.Errorf("read contents at %s: %w", h, err)
		}
		out[i] = m
	}
	return out, nil
}

// resolveTable decides one table changed on both sides. A refusal is an
// outcome with Merged false; errors are for what could not be read or
// written.
func (e *Engine) resolveTable(ctx context.Context, key versionstore.ContentKey, base, src, tgt *versionstore.Content, req versionstore.MergeRequest, w *written) (*TableOutcome, *versionstore.Content, error) {
	// The cherry-pick's files and the new metadata file are written in the
	// background, beside the rest of the merge (the other tables, and the
	// store's computing of the merge commit), and waited for before the
	// store writes the commit that names them (written.check) or before
	// they are removed.
	return e.resolveTableWith(ctx, key, base, src, tgt, req, w, w.behind(ctx, key))
}

func (e *Engine) resolveTableWith(ctx context.Context, key versionstore.ContentKey, base, src, tgt *versionstore.Content, req versionstore.MergeRequest, w *written, wb *tablemerge.WriteBehind) (*TableOutcome, *versionstore.Content, error) {
	out := &TableOutcome{Key: key}
	for _, c := range []*versionstore.Content{base, src, tgt} {
		if c != nil && c.Type != versionstore.IcebergTable {
			out.Reason = fmt.Sprintf("changed on both sides (a %s, which floe merges only at key level)", c.Type)
			return out, nil, nil
		}
	}
	if src == nil || tgt == nil {
		out.Reason = "the table was dropped on one side and changed on the other"
		return out, nil, nil
	}
	classifyTable := e.classifier.Classify
	if req.From == (versionstore.Hash{}) {
		// A transplant (transplant.go): base and source are the table
		// before and after the transplanted commit.
		classifyTable = e.classifier.ClassifyTransplant
	}
	cctx, cspan := e.startSpan(ctx, "classify")
	c, err := classifyTable(cctx, base, src, tgt)
	if err == nil && cspan.IsRecording() {
		cspan.SetAttributes(attribute.String("floe.class", string(c.Class)))
	}
	endSpan(cspan, err)
	if err != nil {
		return nil, nil, fmt.Errorf("classify: %w", err)
	}
	c.Key = append([]string{}, key...)
	out.Classification = c
	refuse := func(why string) (*TableOutcome, *versionstore.Content, error) {
		out.Reason = string(c.Class) + ": " + why
		return out, nil, nil
	}
	wh := icebergtable.Innermost(tgt.MetadataLocation, e.warehouses)
	if wh == nil {
		return nil, nil, fmt.Errorf("metadata file %s lies in no warehouse", tgt.MetadataLocation)
	}
	tgtFile, err := wh.ReadTable(ctx, tgt)
	if err != nil {
		return nil, nil, fmt.Errorf("target: %w", err)
	}
	rule := e.overlap
	if v, ok := tgtFile.Metadata.Properties()[PropPartitionOverlap]; ok {
		if rule, err = ParseOverlapRule(v); err != nil {
			return refuse(fmt.Sprintf("table property %s: %v", PropPartitionOverlap, err))
		}
	}

	srcFile, err := wh.ReadTable(ctx, src)
	if err != nil {
		return nil, nil, fmt.Errorf("source: %w", err)
	}
	picks := unpublished(srcFile.Metadata, tgtFile.Metadata, c.Source.Snapshots)
	if len(picks) == 0 && c.Class != classify.Structural {
		// Everything the source added is on the target already (merged or
		// transplanted before): merging it again changes nothing, whatever
		// the files' overlap says. What else the source changed of the
		// table's metadata is still carried (metadata.go).
		f, why, err := e.carryMetadataOnly(ctx, wh, base, srcFile, tgtFile, w)
		switch {
		case err != nil:
			return nil, nil, err
		case why != "":
			return refuse(why)
		case f != nil:
			out.Merged, out.Resolution, out.Reason = true, classify.AlreadyMerged, "already merged: every snapshot of the source is on the target; carried its changes to the table's structure, properties and refs"
			return out, icebergtable.TableContent(tgt.ID, f), nil
		}
		out.Merged, out.Resolution, out.Reason = true, classify.AlreadyMerged, "already merged: every snapshot of the source is on the target"
		return out, tgt, nil
	}

	switch c.Class {
	case classify.Structural:
		return refuse(c.Reason + structuralAdvice(key, c, req))
	case classify.FileConflict:
		// Replayed below when the source recorded its operations
		// (replay.go); refused otherwise.
	case classify.PartitionOverlap:
		if rule == OverlapRefuse {
			return refuse(fmt.Sprintf("%s, and the table's rule (%s) is %s", c.Reason, PropPartitionOverlap, rule))
		}
	case classify.Disjoint:
	default:
		return refuse(c.Reason)
	}

	picks, replaced, why := replayPlan(key, c, srcFile.Metadata, tgtFile.Metadata, picks)
	if why != "" {
		if c.Class == classify.FileConflict {
			return refuse(fmt.Sprintf("%s; files: %s (not replayed: %s)", c.Reason, strings.Join(c.ConflictingFiles, ", "), why))
		}
		return refuse(why)
	}
	rowMerge, why, err := e.rowMerge(ctx, wh, base, c, srcFile.Metadata, tgtFile.Metadata, picks)
	switch {
	case err != nil:
		return nil, nil, err
	case why != "":
		return refuse(why)
	}
	qctx, qspan := e.startSpan(ctx, "position deletes")
	why, err = positionConflict(qctx, wh, c)
	endSpan(qspan, err)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("compare position deletes: %w", err)
	case why != "":
		return refuse(why)
	}
	overlap := c.Class == classify.PartitionOverlap
	common := c.CommonPartitions
	if c.Class == classify.FileConflict {
		// Partitions both sides touched outside the replaced ones are
		// an overlap like any other, under the table's rule.
		if common = outside(common, replaced); len(common) > 0 {
			overlap = true
			if rule == OverlapRefuse {
				return refuse(fmt.Sprintf("both sides touched %s, and the table's rule (%s) is %s", common[0], PropPartitionOverlap, rule))
			}
		}
	}
	// The source's schema, spec and sort order changes (schema.go).
	head, why, err := e.headWithStructure(ctx, base, srcFile.Metadata, tgtFile.Metadata)
	if err != nil || why != "" {
		if err != nil {
			return nil, nil, err
		}
		return refuse(why)
	}
	pctx, pspan := e.startSpan(ctx, "cherry-pick", attribute.Int("floe.picks", len(picks)))
	cp, err := tablemerge.CherryPick(pctx, wh, tablemerge.Request{
		Head: head, HeadLocation: tgtFile.Location, Picks: picks, SourceRef: req.FromRef, RowMerge: rowMerge, Writes: wb,
	})
	endSpan(pspan, err)
	if cp != nil {
		w.add(wh, cp.Written...)
	}
	switch {
	case errors.Is(err, tablemerge.ErrNotAdditive), errors.Is(err, tablemerge.ErrAlreadyPublished), errors.Is(err, tablemerge.ErrUnsupported),
		errors.Is(err, tablemerge.ErrNotReplayable), errors.Is(err, tablemerge.ErrRowConflict), errors.Is(err, tablemerge.ErrRowMergeBound), errors.Is(err, tablemerge.ErrRowIDNotUnique):
		return refuse(err.Error())
	case err != nil:
		return nil, nil, fmt.Errorf("cherry-pick: %w", err)
	}
	// The source's changes to properties and refs (metadata.go).
	if why, err := e.carryMetadata(ctx, base, srcFile.Metadata, tgtFile.Metadata, cp); err != nil || why != "" {
		if err != nil {
			return nil, nil, err
		}
		return refuse(why)
	}
	meta, err := cp.Builder.Build()
	if err != nil {
		return nil, nil, fmt.Errorf("cherry-pick: build metadata: %w", err)
	}
	loc, err := wh.NewTableMetadataLocation(meta, tgtFile.Location)
	if err != nil {
		return nil, nil, err
	}
	f, err := wh.EncodeTableMetadataFrom(loc, meta, tgtFile)
	if err != nil {
		return nil, nil, err
	}
	w.add(wh, loc)
	wb.Go("write the merged table's metadata", func(ctx context.Context) error { return wh.WriteMetadataFile(ctx, f) })

	if overlap && rule == OverlapCheck {
		// The check reads the merged table's files.
		if err := wb.Wait(); err != nil {
			return nil, nil, err
		}
		dctx, dspan := e.startSpan(ctx, "duplicate-key check")
		dups, err := duplicateKeys(dctx, wh, key, f, common)
		endSpan(dspan, err)
		if err != nil {
			return nil, nil, fmt.Errorf("duplicate-key check: %w", err)
		}
		if len(dups) > 0 {
			return refuse(fmt.Sprintf("%s, and the merged table would hold duplicate identifier keys there (%s is %s): %s",
				c.Reason, PropPartitionOverlap, rule, strings.Join(dups, "; ")))
		}
	}
	out.Merged, out.Picked, out.Resolution = true, cp.Snapshots, classify.CherryPicked
	verb := "cherry-picked"
	if req.DryRun {
		verb = "would cherry-pick"
	}
	out.Reason = fmt.Sprintf("%s: %s %d snapshot(s) of the source onto the target's head", c.Class, verb, len(cp.Snapshots))
	recorded, byFiles, byRows := replayedCount(cp.Snapshots)
	if byRows > 0 {
		out.Resolution = classify.RowMerged
	}
	if recorded+byFiles > 0 {
		out.Resolution = classify.Replayed
		verb = "rebased"
		if req.DryRun {
			verb = "would rebase"
		}
		var how []string
		if recorded > 0 {
			how = append(how, fmt.Sprintf("%d by replaying its recorded operation", recorded))
		}
		if byFiles > 0 {
			how = append(how, fmt.Sprintf("%d by replaying its file changes", byFiles))
		}
		out.Reason = fmt.Sprintf("%s: %s %d snapshot(s) of the source onto the target's head, %s",
			c.Class, verb, len(cp.Snapshots)-byRows, strings.Join(how, ", "))
	}
	if byRows > 0 {
		out.Reason += fmt.Sprintf("; merged %d data file(s) rewritten on both sides by row id", len(c.RowMergedFiles))
	}
	return out, icebergtable.TableContent(tgt.ID, f), nil
}

// unpublished turns the source's snapshots since the base into picks,
// leaving out every snapshot already on the target: the same snapshot
// (an ancestor the target took by a fast-forward, or a copy that kept its
// id), or one cherry-picked before (its copy names it in
// SummarySourceSnapshotID), or a copy of a snapshot the target has (the
// source took it by a merge the other way). Publishing any again would
// duplicate its rows.
func unpublished(srcMeta, tgtMeta table.Metadata, snaps []classify.Snapshot) []tablemerge.Pick {
	onTarget := tablemerge.ChangeSetOf(tgtMeta.Snapshots()...)
	var picks []tablemerge.Pick
	for _, sn := range snaps {
		s := srcMeta.SnapshotByID(sn.SnapshotID)
		if s == nil {
			continue // the classifier read it from this metadata; cannot happen
		}
		if onTarget.Holds(*s) {
			continue
		}
		p := tablemerge.Pick{Snapshot: *s}
		if s.ParentSnapshotID != nil {
			p.Parent = srcMeta.SnapshotByID(*s.ParentSnapshotID)
		}
		picks = append(picks, p)
	}
	return picks
}

// sourceID is the id of the snapshot s copies, if s is a cherry-picked
// copy (tablemerge.SourceSnapshotID).
func sourceID(s table.Snapshot) (int64, bool) { return tablemerge.SourceSnapshotID(s) }

// annotate reports a refused merge: each refused table's conflict message
// ends with the reason, and the tables the engine would have merged are
// no longer conflicts (they would merge; the refused ones are what
// blocks), in the details and the conflict error alike.
func annotate(res *versionstore.MergeResult, ce *versionstore.ConflictError, outcomes []TableOutcome) {
	notes, mergeable := map[string]string{}, map[string]bool{}
	for _, o := range outcomes {
		if o.Merged {
			mergeable[string(o.Key.Encode())] = true
		} else {
			notes[string(o.Key.Encode())] = "floe: refused: " + o.Reason
		}
	}
	note := func(k versionstore.ContentKey, msg *string) {
		n, ok := notes[string(k.Encode())]
		if !ok || strings.Contains(*msg, n) {
			return
		}
		if *msg == "" {
			*msg = n
		} else {
			*msg += "; " + n
		}
	}
	for i := range res.Details {
		d := &res.Details[i]
		switch {
		case d.Conflict == nil:
		case mergeable[string(d.Key.Encode())]:
			d.Conflict = nil
		default:
			note(d.Key, &d.Conflict.Message)
		}
	}
	kept := ce.Conflicts[:0]
	for _, c := range ce.Conflicts {
		if len(c.Key) > 0 && mergeable[string(c.Key.Encode())] {
			continue
		}
		if len(c.Key) > 0 {
			note(c.Key, &c.Message)
		}
		kept = append(kept, c)
	}
	ce.Conflicts = kept
}

func touchesAny(ce *versionstore.ConflictError, keys []versionstore.ContentKey) bool {
	for _, c := range ce.Conflicts {
		for _, k := range keys {
			if slices.Equal(c.Key, k) {
				return true
			}
		}
	}
	return false
}

// written are the files an attempt wrote, removed if it does not commit,
// and the background writes of those still being written (one
// tablemerge.WriteBehind per table).
//
// Invariant: the store writes no commit naming the files before every
// write ended well (check, which the store runs right before it writes),
// and none is removed before its write ended (remove).
type written struct {
	files   []writtenFile
	pending []pendingWrites
}

type pendingWrites struct {
	key versionstore.ContentKey
	wb  *tablemerge.WriteBehind
}

// behind returns a WriteBehind for key's files, under ctx.
func (w *written) behind(ctx context.Context, key versionstore.ContentKey) *tablemerge.WriteBehind {
	wb := tablemerge.NewWriteBehind(ctx)
	w.pending = append(w.pending, pendingWrites{key: key, wb: wb})
	return wb
}

// wait waits for every background write; the first failure is returned,
// as a *FaultError when the storage failed.
func (w *written) wait(op, target string) error {
	var first error
	for _, p := range w.pending {
		if err := p.wb.Wait(); err != nil && first == nil {
			first = fmt.Errorf("write the merged files of %s: %w", p.key, err)
			if isFault(err) {
				first = &FaultError{Op: op, Target: target, Key: p.key, Err: err}
			}
		}
	}
	w.pending = nil
	return first
}

// check is inner (nil: none) run after wait: the store asks it right
// before it writes the commit, which names the files.
func (w *written) check(op, target string, inner versionstore.WriteCheck) versionstore.WriteCheck {
	return func(ctx context.Context, changes []versionstore.CheckedChange) error {
		if err := w.wait(op, target); err != nil {
			return err
		}
		if inner == nil {
			return nil
		}
		return inner(ctx, changes)
	}
}

type writtenFile struct {
	wh  *icebergtable.Warehouse
	loc string
}

func (w *written) add(wh *icebergtable.Warehouse, locs ...string) {
	for _, l := range locs {
		w.files = append(w.files, writtenFile{wh, l})
	}
}

// remove deletes the files, best effort: an uncommitted file is garbage
// no reference reaches, which the reference-aware GC would collect anyway.
func (w *written) remove(ctx context.Context, e *Engine) {
	_ = w.wait("", "") // a write still running would put its file back
	ctx = context.WithoutCancel(ctx)
	for _, f := range w.files {
		if err := f.wh.RemoveFile(ctx, f.loc); err != nil {
			e.logger.WarnContext(ctx, "merge: remove a file of an uncommitted attempt", "file", f.loc, "err", err)
		}
	}
	w.files = nil
}
