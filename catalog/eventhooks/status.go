package eventhooks

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/versionstore"
)

// Status is a subscription as floe's API shows it: its configuration
// (without the secret) and its durable delivery state, read from the
// store, so every replica shows the same.
type Status struct {
	Name string `json:"name"`
	// URL is the receiver's scheme, host and path; a query string or
	// user info, which may carry a credential, is left out.
	URL        string   `json:"url"`
	Principal  string   `json:"principal"`
	Refs       []string `json:"refs,omitempty"`
	Types      []string `json:"types,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Tables     []string `json:"tables,omitempty"`
	// State is nil until the subscription first ran.
	State *State `json:"state"`
}

// ErrNotDeadLettered reports a resume of a subscription that is not
// dead-lettered.
var ErrNotDeadLettered = errors.New("the subscription is not dead-lettered")

// Statuses returns every configured subscription's status, in the order
// of the configuration.
func (s *Service) Statuses(ctx context.Context) ([]Status, error) {
	out := make([]Status, 0, len(s.subs))
	for i := range s.subs {
		st, err := s.status(ctx, &s.subs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *st)
	}
	return out, nil
}

// Status returns one subscription's status, or an error wrapping
// ErrUnknownSubscription.
func (s *Service) Status(ctx context.Context, name string) (*Status, error) {
	sub, err := s.subscription(name)
	if err != nil {
		return nil, err
	}
	return s.status(ctx, sub)
}

func (s *Service) subscription(name string) (*Subscription, error) {
	for i := range s.subs {
		if s.subs[i].Name == name {
			return &s.subs[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownSubscription, name)
}

func (s *Service) status(ctx context.Context, sub *Subscription) (*Status, error) {
	st := &Status{Name: sub.Name, URL: redactURL(sub.URL), Principal: sub.Principal, Refs: sub.Filter.Refs}
	for _, t := range sub.Filter.Types {
		st.Types = append(st.Types, string(t))
	}
	for _, n := range sub.Filter.Namespaces {
		st.Namespaces = append(st.Namespaces, strings.Join(n, "."))
	}
	for _, t := range sub.Filter.Tables {
		st.Tables = append(st.Tables, strings.Join(t, "."))
	}
	d, err := loadState(ctx, s.store, sub.Name)
	if err != nil {
		return nil, err
	}
	if d != nil {
		st.State = &d.State
	}
	return st, nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// Resume puts a dead-lettered subscription back to delivering: from the
// dead-lettered event, which gets a fresh set of attempts, or, with skip,
// from the event after it (the skipped event is then never delivered;
// the log records who skipped it). The deliverer, on whichever replica,
// picks the change up within its poll interval. It fails with an error
// wrapping ErrNotDeadLettered when the subscription is not, and with
// versionstore.ErrRecordConflict when its state changed meanwhile.
func (s *Service) Resume(ctx context.Context, name string, skip bool, principal string) (*Status, error) {
	sub, err := s.subscription(name)
	if err != nil {
		return nil, err
	}
	d, err := loadState(ctx, s.store, name)
	if err != nil {
		return nil, err
	}
	if d == nil || d.Status != StatusDeadLetter {
		return nil, fmt.Errorf("subscription %s: %w", name, ErrNotDeadLettered)
	}
	next := d.State
	skipped := next.Pending
	if skip {
		next.Cursor = next.Pending
	}
	next.Status, next.DeadLetteredAt = StatusActive, time.Time{}
	next.Pending, next.PendingType, next.PendingRef, next.Attempts = changefeed.Cursor{}, "", "", 0
	next.NextAttempt = time.Time{}
	if _, err := saveState(ctx, s.store, name, d, next); err != nil {
		if errors.Is(err, versionstore.ErrRecordConflict) {
			return nil, fmt.Errorf("subscription %s changed while resuming it: %w", name, err)
		}
		return nil, err
	}
	s.logger.InfoContext(ctx, "event webhook: resumed", "subscription", name, "skip", skip, "event", skipped.String(), "principal", principal)
	return s.status(ctx, sub)
}
