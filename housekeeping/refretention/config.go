package refretention

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Config is the server's retention configuration: the defaults of
// branches by name prefix and the prefixes that never expire. It is read
// from a JSON file (`floe serve --ref-retention FILE`, see README.md);
// without one the server uses DefaultConfig.
type Config struct {
	// Branches are the defaults of branches by name prefix; the longest
	// prefix that matches a branch's name applies, field by field under
	// the branch's own settings. A branch no rule matches keeps
	// everything and never expires. They never apply to tags, whose
	// retention is only their own.
	Branches []Rule `json:"branches"`
	// Protected are name prefixes of references that never expire,
	// whatever their settings say (main never expires either). An entry
	// matches a name equal to it or starting with it.
	Protected []string `json:"protected"`
}

// Rule is the default retention of the branches whose names start with
// Prefix.
type Rule struct {
	Prefix string `json:"prefix"`
	// MaxAge: a branch expires this long after its last commit (or its
	// creation, if later). Zero never expires.
	MaxAge Duration `json:"maxAge,omitzero"`
	// KeepCommits and KeepHistory bound the history that stays reachable
	// for time travel and garbage collection (see History). Zero keeps
	// all.
	KeepCommits int      `json:"keepCommits,omitzero"`
	KeepHistory Duration `json:"keepHistory,omitzero"`
}

// DefaultConfig is the retention of a server configured with none, after
// the hygiene of seed 000 ("Branch Hygiene"): ingestion shards live a day
// or two, transformation staging branches a week, feature and user
// branches a month (never unbounded); history is kept whole, and `main`
// and tags never expire.
func DefaultConfig() Config {
	return Config{
		Branches: []Rule{
			{Prefix: "ingest/", MaxAge: Duration(48 * time.Hour)},
			{Prefix: "transform/", MaxAge: Duration(7 * 24 * time.Hour)},
			{Prefix: "feature/", MaxAge: Duration(30 * 24 * time.Hour)},
			{Prefix: "users/", MaxAge: Duration(30 * 24 * time.Hour)},
		},
	}
}

// LoadConfig reads a configuration file (JSON; unknown fields are
// errors, so a misspelled one is not silently ignored).
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("ref retention config: %w", err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("ref retention config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("ref retention config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks the rules: no empty or repeated prefix, nothing
// negative.
func (c Config) Validate() error {
	seen := map[string]bool{}
	for _, r := range c.Branches {
		if r.Prefix == "" {
			return fmt.Errorf("a branch rule needs a prefix")
		}
		if seen[r.Prefix] {
			return fmt.Errorf("branch prefix %q has two rules", r.Prefix)
		}
		seen[r.Prefix] = true
		if r.MaxAge < 0 || r.KeepCommits < 0 || r.KeepHistory < 0 {
			return fmt.Errorf("branch prefix %q: retention cannot be negative", r.Prefix)
		}
	}
	for _, p := range c.Protected {
		if p == "" {
			return fmt.Errorf("an empty protected prefix would protect every reference; leave the list out instead")
		}
	}
	return nil
}

// rule returns the rule of the longest prefix of name, or nil.
func (c Config) rule(name string) *Rule {
	var best *Rule
	for i := range c.Branches {
		r := &c.Branches[i]
		if strings.HasPrefix(name, r.Prefix) && (best == nil || len(r.Prefix) > len(best.Prefix)) {
			best = r
		}
	}
	return best
}

// protected returns the protected prefix name falls under, or "".
func (c Config) protected(name string) string {
	for _, p := range c.Protected {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}
