package mergecheck

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// Table properties (and Options.Defaults keys) that configure the
// built-in checks per table. README.md documents them.
const (
	// PropSchemaChanges: "refuse" (the default: any schema, spec or
	// sort-order change fails the schema check), "additive" (new optional
	// columns pass, nothing else) or "allow".
	PropSchemaChanges = "floe.check.schema-changes"
	// PropMinRecords: each touched partition must hold at least this many
	// records after the merge.
	PropMinRecords = "floe.check.row-count.min-records"
	// PropMaxDecreasePct: no touched partition may lose more than this
	// percentage of its records (0 to 100).
	PropMaxDecreasePct = "floe.check.row-count.max-decrease-pct"
	// PropNotNull: comma-separated columns that must have no nulls in the
	// data files the candidate adds.
	PropNotNull = "floe.check.not-null"
	// PropMaxNullFraction: comma-separated COLUMN:FRACTION pairs (COLUMN
	// "*" for every top-level column): the nulls of the column over the
	// records the candidate adds to each touched partition may not
	// exceed the fraction.
	PropMaxNullFraction = "floe.check.max-null-fraction"
)

// Values of PropSchemaChanges.
const (
	SchemaRefuse   = "refuse"
	SchemaAdditive = "additive"
	SchemaAllow    = "allow"
)

// prop reads a check property of a table: the target's table's own (a
// candidate cannot loosen the checks of the table it publishes to), the
// candidate's for a new table, else the configured default.
func (v *Validator) prop(s *tableScan, key string) string {
	meta := s.tgtMeta
	if meta == nil {
		meta = s.candMeta
	}
	if meta != nil {
		if val, ok := meta.Properties()[key]; ok {
			return strings.TrimSpace(val)
		}
	}
	return strings.TrimSpace(v.opts.Defaults[key])
}

// verdict collects a check's failures and notes.
type verdict struct {
	fails, notes []string
}

func (vd *verdict) fail(format string, args ...any) {
	vd.fails = append(vd.fails, fmt.Sprintf(format, args...))
}
func (vd *verdict) note(format string, args ...any) {
	vd.notes = append(vd.notes, fmt.Sprintf(format, args...))
}

func (vd *verdict) result(name, passed string) CheckResult {
	if len(vd.fails) > 0 {
		return CheckResult{Name: name, Reason: strings.Join(vd.fails, "; ")}
	}
	reason := passed
	if len(vd.notes) > 0 {
		reason = strings.Join(vd.notes, "; ")
	}
	return CheckResult{Name: name, Passed: true, Reason: reason}
}

// checkLineage: the candidate descends from the target head, and
// publishes no snapshot and no file the target already has.
func (v *Validator) checkLineage(ctx context.Context, c Candidate, a *analysis) (CheckResult, error) {
	var vd verdict
	ok, err := v.opts.Store.IsAncestor(ctx, c.TargetHead, c.Commit)
	if err != nil {
		return CheckResult{}, fmt.Errorf("lineage of %s: %w", c.Commit, err)
	}
	if !ok {
		vd.fail("candidate %s does not descend from the target head %s", short(c.Commit), short(c.TargetHead))
	}
	for _, s := range a.tables {
		tableLineage(&vd, s)
	}
	return vd.result(CheckLineage, fmt.Sprintf("candidate descends from %s; %d table(s) publish nothing already on the target", short(c.TargetHead), len(a.tables))), nil
}

// tableLineage: one table's history holds every change of the target's
// (its own snapshots, or copies of them), and what it publishes is not
// the target's already: no snapshot repeats a change, no added file is
// live on the target.
func tableLineage(vd *verdict, s *tableScan) {
	if s.after == nil {
		return
	}
	name := keyName(s.key)
	l := s.lineage
	if l.Broken != "" {
		vd.fail("table %s: the candidate's history: %s", name, l.Broken)
	}
	if len(l.Missing) > 0 {
		head := classify.HeadSnapshotID(s.tgtMeta)
		what := fmt.Sprintf("snapshot %d", l.Missing[0])
		if head != nil && slices.Contains(l.Missing, *head) {
			what = fmt.Sprintf("head snapshot %d", *head)
		}
		fork := ""
		if l.Met != nil {
			fork = fmt.Sprintf(" (it forks at snapshot %d)", *l.Met)
		}
		vd.fail("table %s: the candidate's history does not contain the target's %s%s", name, what, fork)
	}
	for _, r := range l.Twice {
		where := "already on the target"
		if !r.OfBase {
			where = "already in the candidate's history"
		}
		if r.Of == r.Snapshot.SnapshotID {
			vd.fail("table %s: snapshot %d is %s", name, r.Of, where)
		} else {
			vd.fail("table %s: snapshot %d copies snapshot %d, %s", name, r.Snapshot.SnapshotID, r.Of, where)
		}
	}
	dups, first := 0, ""
	for path := range s.added {
		if _, live := s.targetLive[path]; live {
			if dups == 0 || path < first {
				first = path
			}
			dups++
		}
	}
	if dups > 0 {
		vd.fail("table %s: %d file(s) the candidate adds are already live on the target, e.g. %s (snapshot %d)", name, dups, first, s.added[first].snapshotID)
	}
}

// checkSchema: no schema, spec or sort-order change unless the table's
// rule or the request allows it.
func (v *Validator) checkSchema(c Candidate, a *analysis) CheckResult {
	var vd verdict
	for _, s := range a.tables {
		if s.before == nil || s.after == nil {
			continue // created or dropped: no structure to keep
		}
		changes := classify.StructureChanges(s.tgtMeta, s.candMeta)
		if len(changes) == 0 {
			continue
		}
		name := keyName(s.key)
		desc := changeTexts(changes, nil)
		if c.AllowStructural {
			vd.note("table %s: %s (allowed by the request)", name, desc)
			continue
		}
		switch rule := v.prop(s, PropSchemaChanges); rule {
		case SchemaAllow:
			vd.note("table %s: %s (allowed by %s=allow)", name, desc, PropSchemaChanges)
		case SchemaAdditive:
			if bad := changeTexts(changes, func(c classify.StructureChange) bool { return !c.Additive }); bad != "" {
				vd.fail("table %s: %s (%s=additive allows only new optional columns)", name, bad, PropSchemaChanges)
			} else {
				vd.note("table %s: %s (additive)", name, desc)
			}
		case "", SchemaRefuse:
			vd.fail("table %s: unexpected structural change: %s", name, desc)
		default:
			vd.fail("table %s: %s=%q is not refuse, additive or allow", name, PropSchemaChanges, rule)
		}
	}
	return vd.result(CheckSchema, "no schema, spec or sort-order change")
}

// changeTexts joins the texts of the changes keep holds (all of them
// without keep).
func changeTexts(changes []classify.StructureChange, keep func(classify.StructureChange) bool) string {
	var texts []string
	for _, c := range changes {
		if keep == nil || keep(c) {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "; ")
}

// checkRowCount: thresholds on the records of the touched partitions.
func (v *Validator) checkRowCount(a *analysis) CheckResult {
	var vd verdict
	checked := 0
	for i, s := range a.tables {
		if s.after == nil {
			continue
		}
		name := keyName(s.key)
		minRecords, err := intProp(v.prop(s, PropMinRecords))
		if err != nil {
			vd.fail("table %s: %s: %v", name, PropMinRecords, err)
			continue
		}
		maxDecrease, err := floatProp(v.prop(s, PropMaxDecreasePct))
		if err == nil && maxDecrease != nil && (*maxDecrease < 0 || *maxDecrease > 100) {
			err = fmt.Errorf("%v is not between 0 and 100", *maxDecrease)
		}
		if err != nil {
			vd.fail("table %s: %s: %v", name, PropMaxDecreasePct, err)
			continue
		}
		if minRecords == nil && maxDecrease == nil {
			continue
		}
		for _, p := range a.summary.Tables[i].Partitions {
			checked++
			// Rows the added delete files remove count against the
			// partition (at most that many rows: equality deletes).
			after := p.RecordsAfter - p.DeletedRecords
			if minRecords != nil && after < *minRecords {
				vd.fail("table %s partition %s: %d record(s) after the merge, fewer than %s=%d", name, partName(p), after, PropMinRecords, *minRecords)
			}
			if maxDecrease != nil && p.RecordsBefore > 0 {
				lost := float64(p.RecordsBefore-after) / float64(p.RecordsBefore) * 100
				if lost > *maxDecrease {
					vd.fail("table %s partition %s: %d record(s) before, %d after: %.1f%% fewer, more than %s=%v", name, partName(p), p.RecordsBefore, after, lost, PropMaxDecreasePct, *maxDecrease)
				}
			}
		}
	}
	if checked == 0 {
		return vd.result(CheckRowCount, "no row-count threshold applies to the touched partitions")
	}
	return vd.result(CheckRowCount, fmt.Sprintf("%d touched partition(s) within their row-count thresholds", checked))
}

// checkNulls: null counts of the data files the candidate adds, from
// their manifest entries' statistics.
func (v *Validator) checkNulls(a *analysis) CheckResult {
	var vd verdict
	checked := 0
	for _, s := range a.tables {
		if s.after == nil {
			continue
		}
		name := keyName(s.key)
		limits, err := nullLimits(v.prop(s, PropNotNull), v.prop(s, PropMaxNullFraction))
		if err != nil {
			vd.fail("table %s: %v", name, err)
			continue
		}
		if len(limits) == 0 {
			continue
		}
		sc := s.candMeta.CurrentSchema()
		type column struct {
			id   int
			name string
			max  float64
		}
		var cols []column
		for _, l := range limits {
			if l.column == "*" {
				for _, f := range sc.Fields() {
					cols = append(cols, column{f.ID, f.Name, l.max})
				}
				continue
			}
			f, ok := sc.FindFieldByName(l.column)
			if !ok {
				vd.fail("table %s: %s names column %s, which the table does not have", name, propOf(l), l.column)
				continue
			}
			cols = append(cols, column{f.ID, l.column, l.max})
		}
		// Per touched partition: records added and nulls per column,
		// over the net added data files (classify's list).
		type tally struct {
			records int64
			nulls   map[int]int64
		}
		parts := map[string]*tally{}
		for _, f := range s.cls.Source.DataFiles.Added {
			st, ok := s.added[f.Path]
			if !ok || st.content != iceberg.EntryContentData {
				continue
			}
			key := f.Partition.String()
			t := parts[key]
			if t == nil {
				t = &tally{nulls: map[int]int64{}}
				parts[key] = t
			}
			t.records += st.records
			for _, c := range cols {
				n, ok := st.nulls[c.id]
				if !ok {
					// Without statistics nothing says the column is
					// clean: the check cannot pass on faith.
					vd.fail("table %s: data file %s records no null count for column %s (metrics mode none?)", name, f.Path, c.name)
					continue
				}
				t.nulls[c.id] += n
			}
		}
		for _, key := range sortedKeys(parts) {
			t := parts[key]
			checked++
			for _, c := range cols {
				n := t.nulls[c.id]
				if t.records == 0 || n == 0 {
					continue
				}
				frac := float64(n) / float64(t.records)
				if c.max == 0 {
					vd.fail("table %s partition %s: %d null(s) in column %s, which must have none", name, key, n, c.name)
				} else if frac > c.max {
					vd.fail("table %s partition %s: column %s is %.1f%% null (%d of %d added records), more than %v", name, key, c.name, frac*100, n, t.records, c.max)
				}
			}
		}
	}
	if checked == 0 {
		return vd.result(CheckNulls, "no null check applies to the touched partitions")
	}
	return vd.result(CheckNulls, fmt.Sprintf("%d touched partition(s) within their null limits", checked))
}

type nullLimit struct {
	column string
	max    float64 // 0: no nulls at all
	strict bool    // from PropNotNull
}

func propOf(l nullLimit) string {
	if l.strict {
		return PropNotNull
	}
	return PropMaxNullFraction
}

func nullLimits(notNull, fractions string) ([]nullLimit, error) {
	var out []nullLimit
	for _, c := range strings.Split(notNull, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, nullLimit{column: c, strict: true})
		}
	}
	for _, kv := range strings.Split(fractions, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		col, val, ok := strings.Cut(kv, ":")
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if !ok || err != nil || f < 0 || f > 1 || math.IsNaN(f) {
			return nil, fmt.Errorf("%s: %q is not COLUMN:FRACTION with a fraction from 0 to 1", PropMaxNullFraction, kv)
		}
		out = append(out, nullLimit{column: strings.TrimSpace(col), max: f})
	}
	return out, nil
}

func intProp(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not an integer", s)
	}
	return &n, nil
}

func floatProp(s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	return &f, nil
}

func partName(p PartitionSummary) string {
	s := p.Path
	if s == "" {
		s = "(unpartitioned)"
	}
	if p.SpecID != 0 {
		s += fmt.Sprintf(" [spec %d]", p.SpecID)
	}
	return s
}

func short(h versionstore.Hash) string { return h.String()[:12] }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
