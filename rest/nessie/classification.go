package nessie

import (
	"context"
	"errors"
	"net/http"
	"strings"

	tableclass "github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// Classifier classifies what the two sides of a merge did to one Iceberg
// table since their merge base (package classify implements it over the
// warehouses' files). base is nil when the key did not exist at the merge
// base; source or target nil means that side dropped it.
type Classifier interface {
	Classify(ctx context.Context, base, source, target *versionstore.Content) (*tableclass.Table, error)
}

// classificationParam asks a dry-run merge for floe's classification
// document in each conflicting detail (floeClassification). Nessie's own
// clients never send it, so their responses keep Nessie's exact shape;
// every client gets the class and reason in the conflict's message.
const classificationParam = "floe-classification"

func wantsClassification(r *http.Request) bool {
	v := r.URL.Query().Get(classificationParam)
	return v == "true" || v == "1"
}

// classifyConflicts classifies every Iceberg table of a dry-run merge that
// conflicts at key level (changed on both sides) and appends the class and
// reason to the conflict's message, in the result's details and in the
// conflict error alike. A table that cannot be classified (unreadable
// metadata) keeps its plain conflict and says why; the dry run never fails
// for it. The tables are returned by key (keyString).
func (a *api) classifyConflicts(ctx context.Context, from versionstore.Hash, res *versionstore.MergeResult, err error) map[string]*tableclass.Table {
	if a.classify == nil || res == nil || res.CommonAncestor == (versionstore.Hash{}) {
		return nil
	}
	var keys []versionstore.ContentKey
	for _, d := range res.Details {
		if d.Conflict != nil && len(d.Key) > 0 {
			keys = append(keys, d.Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	at := func(h versionstore.Hash) (map[string]*versionstore.Content, bool) {
		m, err := a.store.GetContents(ctx, h, keys)
		if err != nil {
			a.logger.WarnContext(ctx, "nessie: dry-run classification: read contents", "commit", h.String(), "err", err)
			return nil, false
		}
		return m, true
	}
	base, ok1 := at(res.CommonAncestor)
	source, ok2 := at(from)
	target, ok3 := at(res.EffectiveTargetHash)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	tables := map[string]*tableclass.Table{}
	notes := map[string]string{}
	for _, k := range keys {
		ks, enc := k.String(), string(k.Encode())
		b, s, t := base[enc], source[enc], target[enc]
		if !isTable(b) || !isTable(s) || !isTable(t) || (s == nil && t == nil) {
			continue
		}
		c, err := a.classify.Classify(ctx, b, s, t)
		if err != nil {
			a.logger.WarnContext(ctx, "nessie: dry-run classification failed", "key", ks, "err", err)
			notes[keyString(k)] = "floe could not classify the table: " + err.Error()
			continue
		}
		c.Key = append([]string{}, k...)
		tables[keyString(k)] = c
		notes[keyString(k)] = "floe: " + string(c.Class) + ": " + c.Reason
	}
	note := func(key versionstore.ContentKey, msg string) string {
		n, ok := notes[keyString(key)]
		if !ok {
			return msg
		}
		if msg == "" {
			return n
		}
		return msg + "; " + n
	}
	for _, d := range res.Details {
		if d.Conflict != nil {
			d.Conflict.Message = note(d.Key, d.Conflict.Message)
		}
	}
	var ce *versionstore.ConflictError
	if errors.As(err, &ce) {
		for i := range ce.Conflicts {
			// The details may share the conflicts; note each message once.
			if c := &ce.Conflicts[i]; len(c.Key) > 0 && !strings.Contains(c.Message, notes[keyString(c.Key)]) {
				c.Message = note(c.Key, c.Message)
			}
		}
	}
	return tables
}

// isTable reports whether c is an Iceberg table or absent.
func isTable(c *versionstore.Content) bool {
	return c == nil || c.Type == versionstore.IcebergTable
}

func keyString(k versionstore.ContentKey) string { return strings.Join(k, "\x00") }

// attach puts each classified table into its detail.
func (m mergeResponse) attach(tables map[string]*tableclass.Table) {
	for i := range m.Details {
		m.Details[i].FloeClassification = tables[keyString(m.Details[i].Key.Elements)]
	}
}

// Merger merges a source into a target branch, resolving the Iceberg
// tables both sides changed where it can (package mergeengine implements
// it, through assemble). It returns what the store's Merge returns, and
// what it did (or, for a dry run, would do) with each table it classified:
// a refusal is a *versionstore.ConflictError (possibly wrapped), with the
// reason in each refused table's conflict message, and nothing written. A
// dry run (req.DryRun) goes through it too and reports what the real
// merge would do, writing nothing. TransplantTables is the same for a
// transplant: a table the target changed too is decided on the
// transplanted commit's own snapshots.
type Merger interface {
	MergeTables(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, []TableOutcome, error)
	TransplantTables(ctx context.Context, req versionstore.TransplantRequest) (*versionstore.MergeResult, []TableOutcome, error)
}

// TableOutcome is what a Merger did, or would do, with one table both
// sides changed.
type TableOutcome struct {
	Key            versionstore.ContentKey
	Classification *tableclass.Table // nil when the table could not be read
	Merged         bool              // merged (or, in a dry run, mergeable)
	Reason         string            // what was merged, or why it was refused
	Picked         int               // snapshots cherry-picked onto the target
	// Discard, for a table the merge takes whole from the source (merge
	// behavior FORCE) although the target changed it, is what of the
	// target that throws away; Classification is nil then.
	Discard *tableclass.Discard
}

// floeMergeJSON is a detail's floeMerge: what the merge does with the
// table (given with floeClassification).
type floeMergeJSON struct {
	// Action is "cherry-pick", "already-merged" (everything the source
	// added is on the target), "refuse", or "force" (the key's merge
	// behavior is FORCE and the target changed the table: Discards says
	// what of the target the merge throws away).
	Action    string              `json:"action"`
	Snapshots int                 `json:"snapshots"`
	Reason    string              `json:"reason"`
	Discards  *tableclass.Discard `json:"discards,omitempty"`
}

func floeMerge(o TableOutcome) *floeMergeJSON {
	switch {
	case o.Discard != nil:
		return &floeMergeJSON{Action: "force", Reason: o.Reason, Discards: o.Discard}
	case !o.Merged:
		return &floeMergeJSON{Action: "refuse", Reason: o.Reason}
	case o.Picked == 0:
		return &floeMergeJSON{Action: "already-merged", Reason: o.Reason}
	default:
		return &floeMergeJSON{Action: "cherry-pick", Snapshots: o.Picked, Reason: o.Reason}
	}
}

// decided reports whether the merge engine decided on some table changed
// on both sides (a forced table's report is not a decision).
func decided(outcomes []TableOutcome) bool {
	for _, o := range outcomes {
		if o.Discard == nil {
			return true
		}
	}
	return false
}

// attachOutcomes puts each table's classification and outcome into its
// detail.
func (m mergeResponse) attachOutcomes(outcomes []TableOutcome) {
	byKey := map[string]TableOutcome{}
	for _, o := range outcomes {
		byKey[keyString(o.Key)] = o
	}
	for i := range m.Details {
		if o, ok := byKey[keyString(m.Details[i].Key.Elements)]; ok {
			m.Details[i].FloeClassification = o.Classification
			m.Details[i].FloeMerge = floeMerge(o)
		}
	}
}
