package eventhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
)

// Subscription is one webhook that receives the change feed.
type Subscription struct {
	// Name identifies the subscription: its durable state is kept under
	// it, so renaming a subscription starts a new one.
	Name string
	// URL receives one POST per event.
	URL string
	// Secret keys the HMAC-SHA256 signature of every body
	// (SignatureHeader). Required: an unsigned event could be forged.
	Secret string
	// Principal and Groups are who the subscription reads as: it
	// receives only events on references the policy lets this principal
	// read (the decision that reading a table on that branch takes).
	Principal string
	Groups    []string
	// Filter selects the events; the zero Filter selects every event.
	Filter Filter
	// FromStart makes a subscription that has no durable state yet begin
	// with the feed's first event; otherwise it begins with what happens
	// after it first runs.
	FromStart bool
	// Timeout bounds one attempt; 0 is DefaultTimeout.
	Timeout time.Duration
	// Backoff is the delay after the first failed attempt; each further
	// failure doubles it up to MaxBackoff, and each delay is drawn from
	// its upper half (jitter). 0 is DefaultBackoff, DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxAttempts is how many attempts one event gets before the
	// subscription is dead-lettered on it; 0 is DefaultMaxAttempts.
	MaxAttempts int
}

// Defaults of a Subscription.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultMaxAttempts = 10
)

func (s *Subscription) withDefaults() {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Backoff <= 0 {
		s.Backoff = DefaultBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	s.MaxBackoff = max(s.MaxBackoff, s.Backoff)
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
}

// validName keeps names usable in a record key, a URL path and a metric
// label.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func (s *Subscription) validate() error {
	switch {
	case !validName.MatchString(s.Name):
		return fmt.Errorf("name %q: want 1 to 100 letters, digits, '.', '_' or '-'", s.Name)
	case s.Secret == "":
		return fmt.Errorf("subscription %s: the secret is empty", s.Name)
	case s.Principal == "":
		return fmt.Errorf("subscription %s: a principal is needed (who the subscription reads as)", s.Name)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("subscription %s: url %q is not an http(s) URL", s.Name, s.URL)
	}
	return nil
}

// File is the webhook configuration file (`floe serve --event-webhooks
// FILE`; deploy/event-webhooks.json is an example). Secrets never sit in
// the file: each subscription names a file or an environment variable
// that holds its secret, as the merge checks' webhooks do.
type File struct {
	// Source is the CloudEvents source of every event: a URI naming this
	// catalog, the same on every replica; "" is DefaultSource.
	Source        string             `json:"source"`
	Subscriptions []SubscriptionFile `json:"subscriptions"`
}

// DefaultSource is the CloudEvents source when the file names none.
const DefaultSource = "/floe"

// SubscriptionFile is one subscription as the file states it.
type SubscriptionFile struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// SecretFile or SecretEnv holds the HMAC secret (surrounding
	// whitespace trimmed); exactly one is set.
	SecretFile string   `json:"secretFile"`
	SecretEnv  string   `json:"secretEnv"`
	Principal  string   `json:"principal"`
	Groups     []string `json:"groups"`
	// Refs are reference names, or prefixes ending in "*" ("etl/*").
	Refs []string `json:"refs"`
	// Types are event types or categories ("table.*"), as the API's.
	Types []string `json:"types"`
	// Namespaces and Tables are dotted names ("db.sales",
	// "db.sales.orders").
	Namespaces []string `json:"namespaces"`
	Tables     []string `json:"tables"`
	// Start is "now" (the default) or "beginning".
	Start string `json:"start"`
	// Timeout, Backoff and MaxBackoff are Go durations ("10s").
	Timeout     string `json:"timeout"`
	Backoff     string `json:"backoff"`
	MaxBackoff  string `json:"maxBackoff"`
	MaxAttempts int    `json:"maxAttempts"`
}

// LoadConfig reads a configuration file and resolves the subscriptions'
// secrets (getenv reads SecretEnv; nil means os.Getenv).
func LoadConfig(path string, getenv func(string) string) (string, []Subscription, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("event webhooks: %w", err)
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return "", nil, fmt.Errorf("event webhooks %s: %w", path, err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if f.Source == "" {
		f.Source = DefaultSource
	}
	if _, err := url.Parse(f.Source); err != nil {
		return "", nil, fmt.Errorf("event webhooks %s: source %q is not a URI reference: %w", path, f.Source, err)
	}
	seen := map[string]bool{}
	var out []Subscription
	for i, sf := range f.Subscriptions {
		s, err := sf.resolve(getenv)
		if err == nil && seen[s.Name] {
			err = fmt.Errorf("the name is used twice")
		}
		if err != nil {
			return "", nil, fmt.Errorf("event webhooks %s: subscription %d (%q): %w", path, i+1, sf.Name, err)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return f.Source, out, nil
}

func (sf SubscriptionFile) resolve(getenv func(string) string) (Subscription, error) {
	s := Subscription{Name: sf.Name, URL: sf.URL, Principal: sf.Principal, Groups: sf.Groups, MaxAttempts: sf.MaxAttempts}
	var err error
	for _, d := range []struct {
		name string
		in   string
		out  *time.Duration
	}{{"timeout", sf.Timeout, &s.Timeout}, {"backoff", sf.Backoff, &s.Backoff}, {"maxBackoff", sf.MaxBackoff, &s.MaxBackoff}} {
		if d.in == "" {
			continue
		}
		if *d.out, err = time.ParseDuration(d.in); err != nil || *d.out <= 0 {
			return s, fmt.Errorf("%s %q: want a positive Go duration", d.name, d.in)
		}
	}
	if sf.MaxAttempts < 0 {
		return s, fmt.Errorf("maxAttempts %d is negative", sf.MaxAttempts)
	}
	switch sf.Start {
	case "", "now":
	case "beginning":
		s.FromStart = true
	default:
		return s, fmt.Errorf("start %q: want now or beginning", sf.Start)
	}
	if s.Filter.Types, err = changefeed.ParseTypes(sf.Types); err != nil {
		return s, err
	}
	s.Filter.Refs = sf.Refs
	for _, n := range sf.Namespaces {
		s.Filter.Namespaces = append(s.Filter.Namespaces, strings.Split(n, "."))
	}
	for _, t := range sf.Tables {
		k := strings.Split(t, ".")
		if len(k) < 2 {
			return s, fmt.Errorf("table %q: want namespace.name", t)
		}
		s.Filter.Tables = append(s.Filter.Tables, k)
	}
	switch {
	case (sf.SecretFile == "") == (sf.SecretEnv == ""):
		return s, fmt.Errorf("set exactly one of secretFile and secretEnv")
	case sf.SecretFile != "":
		b, err := os.ReadFile(sf.SecretFile)
		if err != nil {
			return s, fmt.Errorf("secret: %w", err)
		}
		s.Secret = strings.TrimSpace(string(b))
	default:
		s.Secret = strings.TrimSpace(getenv(sf.SecretEnv))
	}
	return s, s.validate()
}
