package mergequeue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/versionstore"
)

// Rules are the queue's configuration: the branches only the queue may
// write, how long a request waits before it is admitted alone, how many
// requests a batch holds, and the per-prefix rules of the sources (branch
// hygiene). They are read from one JSON file (`floe serve --merge-queue
// FILE`; deploy/merge-queue.json is the documented example); without one
// the queue uses DefaultRules.
type Rules struct {
	// Protected are the branches the queue is the single committer of
	// (none by default; deploy/merge-queue.json protects main): a commit
	// that reaches one by any other path is counted as a bypass
	// (floe_queue_bypass_commits_total) and logged. The default policy
	// bundle's rule of the same name (data.floe.config.queue_protected)
	// refuses such writes to everybody but admins.
	Protected []string `json:"protected"`
	// AgeLimit: a request that has waited this long is admitted alone,
	// ahead of requests of higher priority, so a large request (a
	// backfill) is never starved by a stream of small ones. Zero is 15
	// minutes.
	AgeLimit refretention.Duration `json:"ageLimit,omitzero"`
	// MaxBatch bounds the requests merged onto one candidate and landed
	// in one durable write. Zero is 8; 1 turns batching off.
	MaxBatch int `json:"maxBatch,omitzero"`
	// SchemaChanges says what the queue does with a request that changes
	// a table's schema, partition spec or sort order: "review" (the
	// default, "") waits for a reviewer's approval, then merges it as the
	// merge engine does (a change on one side merges; one on both sides
	// fails); "merge" merges it at once, and the validator decides
	// (mergecheck's schema check by the target table's
	// floe.check.schema-changes). A request that drops or replaces a
	// table is always reviewed.
	SchemaChanges string `json:"schemaChanges,omitempty"`
	// Prefixes are the rules by source branch prefix; the longest prefix
	// that matches the source's name applies. A source no rule matches
	// is of class "other" with the zero rule's settings except Batch,
	// which is true.
	Prefixes []PrefixRule `json:"prefixes"`
}

// PrefixRule is what the queue does with requests whose source branch
// name starts with Prefix.
type PrefixRule struct {
	Prefix string `json:"prefix"`
	// Class names the requests in the report and the metrics; "" is the
	// prefix without its trailing '/' (users/<id>/ is class "users").
	Class string `json:"class,omitempty"`
	// Batch lets the request share a candidate with other requests;
	// false admits it alone.
	Batch bool `json:"batch"`
	// RequiredChecks are added to every request's own.
	RequiredChecks []string `json:"requiredChecks,omitempty"`
	// DropAfterMerge deletes the source branch once its request merged
	// (only if it still points at the commit that was merged).
	DropAfterMerge bool `json:"dropAfterMerge"`
	// Tag, if set, tags the landed commit: "{source}" is replaced by the
	// source branch name and "{id}" by the request id, e.g.
	// "merged/{source}".
	Tag string `json:"tag,omitempty"`
}

// Values of Rules.SchemaChanges.
const (
	SchemaChangesReview = "review"
	SchemaChangesMerge  = "merge"
)

// DefaultRules are the queue's rules without a configuration file, after
// the seed's "Branch Hygiene": ingestion and transformation branches are
// batched and dropped once merged; user and feature branches are batched
// and kept; a backfill is admitted alone, dropped and tagged. No branch is
// protected: making the queue a branch's single committer is the
// operator's choice (Protected, and the policy's queue_protected), since
// until then direct merges are how the branch is written.
func DefaultRules() Rules {
	return Rules{
		AgeLimit: refretention.Duration(15 * time.Minute),
		MaxBatch: 8,
		Prefixes: []PrefixRule{
			{Prefix: "ingest/", Class: "ingest", Batch: true, DropAfterMerge: true},
			{Prefix: "transform/", Class: "transform", Batch: true, DropAfterMerge: true},
			{Prefix: "users/", Class: "users", Batch: true},
			{Prefix: "feature/", Class: "feature", Batch: true},
			{Prefix: "backfill/", Class: "backfill", Batch: false, DropAfterMerge: true, Tag: "merged/{source}"},
		},
	}
}

// LoadRules reads a rules file (JSON; unknown fields are errors, so a
// misspelled one is not silently ignored).
func LoadRules(path string) (Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Rules{}, fmt.Errorf("merge queue rules: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Rules
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("merge queue rules %s: %w", path, err)
	}
	if err := r.Validate(); err != nil {
		return Rules{}, fmt.Errorf("merge queue rules %s: %w", path, err)
	}
	return r, nil
}

// Validate checks the rules' values.
func (r Rules) Validate() error {
	if r.MaxBatch < 0 || r.AgeLimit < 0 {
		return fmt.Errorf("maxBatch and ageLimit cannot be negative")
	}
	switch r.SchemaChanges {
	case "", SchemaChangesReview, SchemaChangesMerge:
	default:
		return fmt.Errorf("schemaChanges %q: review or merge", r.SchemaChanges)
	}
	for _, b := range r.Protected {
		if err := versionstore.ValidateRefName(b); err != nil {
			return fmt.Errorf("protected: %w", err)
		}
	}
	for _, p := range r.Prefixes {
		if p.Prefix == "" {
			return fmt.Errorf("a prefix rule needs a prefix")
		}
		if strings.HasPrefix(p.Prefix, CandidatePrefix) {
			return fmt.Errorf("prefix %q: %s is the queue's own", p.Prefix, CandidatePrefix)
		}
	}
	return nil
}

func (r Rules) ageLimit() time.Duration {
	if r.AgeLimit == 0 {
		return 15 * time.Minute
	}
	return time.Duration(r.AgeLimit)
}

func (r Rules) maxBatch() int {
	if r.MaxBatch == 0 {
		return 8
	}
	return r.MaxBatch
}

// ruleFor returns the rule of a source ref name (the longest matching
// prefix) and its class.
func (r Rules) ruleFor(source string) (PrefixRule, string) {
	best := -1
	for i, p := range r.Prefixes {
		if strings.HasPrefix(source, p.Prefix) && (best < 0 || len(p.Prefix) > len(r.Prefixes[best].Prefix)) {
			best = i
		}
	}
	if best < 0 {
		return PrefixRule{Batch: true}, "other"
	}
	p := r.Prefixes[best]
	class := p.Class
	if class == "" {
		class = strings.TrimSuffix(p.Prefix, "/")
	}
	return p, class
}

func (r Rules) protected(branch string) bool {
	for _, b := range r.Protected {
		if b == branch {
			return true
		}
	}
	return false
}

// tagName fills a rule's tag template.
func tagName(template, source, id string) string {
	return strings.NewReplacer("{source}", source, "{id}", id).Replace(template)
}
