package eventhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/policy"
)

// Filter selects the events a subscription receives. Each non-empty list
// must match; an empty one matches everything.
type Filter struct {
	// Refs are reference names, or prefixes ending in "*".
	Refs []string
	// Types are event types.
	Types []changefeed.Type
	// Namespaces and Tables are catalog keys (namespace elements, then a
	// table's name). With either set, only events about a matching entry
	// pass: a content event whose key (or key before a rename) is a
	// listed table or lies in a listed namespace, or a commit, merge or
	// transplant event that changed such an entry. Reference events
	// (branch.*, tag.*) concern no entry and do not pass.
	Namespaces [][]string
	Tables     [][]string
}

// matches reports whether ev passes every list but Types (which the
// feed's query applies).
func (f *Filter) matches(ev *changefeed.Event) bool {
	if len(f.Refs) > 0 && !slices.ContainsFunc(f.Refs, func(p string) bool { return refMatches(p, ev.Ref) }) {
		return false
	}
	if len(f.Namespaces) == 0 && len(f.Tables) == 0 {
		return true
	}
	var keys [][]string
	switch {
	case ev.Content != nil:
		keys = append(keys, ev.Content.Key)
		if ev.Content.PreviousKey != nil {
			keys = append(keys, ev.Content.PreviousKey)
		}
	case ev.Details != nil:
		keys = ev.Details.Keys
	}
	return slices.ContainsFunc(keys, f.keyMatches)
}

func refMatches(pattern, ref string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(ref, p)
	}
	return pattern == ref
}

func (f *Filter) keyMatches(key []string) bool {
	for _, t := range f.Tables {
		if slices.Equal(t, key) {
			return true
		}
	}
	for _, ns := range f.Namespaces {
		if len(key) >= len(ns) && slices.Equal(key[:len(ns)], ns) {
			return true
		}
	}
	return false
}

// Decider answers authorization questions; *policy.Engine is one.
type Decider interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
}

// allow returns the feed's Allow for one page of sub's delivery: the
// filter, then, with a decider, the policy's read decision for sub's
// principal on the event's reference (for an event on no reference,
// policy.ActionEventsRead), asked once per reference and page
// (and answered from the engine's decision cache across pages). A
// refusal passes over the event; a failure to decide ends the read, so
// that an unavailable policy delays events and never drops them.
func allow(sub *Subscription, d Decider) func(context.Context, *changefeed.Event) (bool, error) {
	decided := map[policy.Ref]bool{}
	return func(ctx context.Context, ev *changefeed.Event) (bool, error) {
		if !sub.Filter.matches(ev) {
			return false, nil
		}
		if d == nil {
			return true, nil
		}
		ref := policy.Ref{Name: ev.Ref, Type: policy.RefBranch}
		if ev.RefType == "TAG" {
			ref.Type = policy.RefTag
		}
		action := policy.ActionRead
		if ev.Ref == "" {
			// An event about the catalog as a whole (a GC run, a
			// policy bundle activation): on no reference.
			ref, action = policy.Ref{}, policy.ActionEventsRead
		}
		if ok, seen := decided[ref]; seen {
			return ok, nil
		}
		in := policy.Input{
			Version: policy.InputVersion, API: "floe", Action: action, Ref: ref,
			Principal: policy.Principal{ID: sub.Principal, Groups: sub.Groups},
		}
		if ev.Ref == "" {
			in.Ref = policy.Ref{}
		}
		dec, err := d.Decide(ctx, in)
		if err != nil {
			return false, fmt.Errorf("subscription %s: deciding a read of %s: %w", sub.Name, ref.Name, err)
		}
		decided[ref] = dec.Allow
		return dec.Allow, nil
	}
}
