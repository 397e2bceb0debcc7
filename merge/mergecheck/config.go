package mergecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Config is the merge-check configuration file (`floe serve
// --merge-checks FILE`; deploy/merge-checks.json is an example): check
// properties for tables that set none, and the external checks.
// Secrets never sit in the file: each check names a file or an
// environment variable that holds its secret.
type Config struct {
	// Defaults are check properties (floe.check.*) for tables without
	// their own.
	Defaults map[string]string `json:"defaults"`
	Checks   []CheckConfig     `json:"checks"`
}

// CheckConfig is one external check as the file states it.
type CheckConfig struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// SecretFile or SecretEnv holds the HMAC secret (surrounding
	// whitespace trimmed); exactly one is set.
	SecretFile string `json:"secretFile"`
	SecretEnv  string `json:"secretEnv"`
	// Timeout and Backoff are Go durations ("10s", "250ms"); empty means
	// the default.
	Timeout string `json:"timeout"`
	Backoff string `json:"backoff"`
	// Retries after a failed attempt; absent means DefaultRetries, 0
	// none.
	Retries *int `json:"retries"`
	Always  bool `json:"always"`
}

// LoadConfig reads a configuration file and resolves the checks'
// secrets (getenv reads SecretEnv; nil means os.Getenv).
func LoadConfig(path string, getenv func(string) string) (Config, []ExternalCheck, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("merge checks: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, nil, fmt.Errorf("merge checks %s: %w", path, err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	for k := range cfg.Defaults {
		if !strings.HasPrefix(k, "floe.check.") {
			return Config{}, nil, fmt.Errorf("merge checks %s: default %q is not a floe.check.* property", path, k)
		}
	}
	var out []ExternalCheck
	for i, c := range cfg.Checks {
		e, err := c.resolve(getenv)
		if err != nil {
			return Config{}, nil, fmt.Errorf("merge checks %s: check %d (%q): %w", path, i+1, c.Name, err)
		}
		out = append(out, e)
	}
	return cfg, out, nil
}

func (c CheckConfig) resolve(getenv func(string) string) (ExternalCheck, error) {
	e := ExternalCheck{Name: c.Name, URL: c.URL, Always: c.Always}
	var err error
	if e.Timeout, err = duration(c.Timeout); err != nil {
		return e, fmt.Errorf("timeout: %w", err)
	}
	if e.Backoff, err = duration(c.Backoff); err != nil {
		return e, fmt.Errorf("backoff: %w", err)
	}
	switch {
	case c.Retries == nil:
	case *c.Retries < 0:
		return e, fmt.Errorf("retries %d is negative", *c.Retries)
	case *c.Retries == 0:
		e.Retries = -1
	default:
		e.Retries = *c.Retries
	}
	switch {
	case (c.SecretFile == "") == (c.SecretEnv == ""):
		return e, fmt.Errorf("set exactly one of secretFile and secretEnv")
	case c.SecretFile != "":
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return e, fmt.Errorf("secret: %w", err)
		}
		e.Secret = strings.TrimSpace(string(b))
	default:
		e.Secret = strings.TrimSpace(getenv(c.SecretEnv))
	}
	if e.Secret == "" {
		return e, fmt.Errorf("the secret is empty")
	}
	if !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://") {
		return e, fmt.Errorf("url %q is not http(s)", e.URL)
	}
	return e, nil
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%q is not positive", s)
	}
	return d, err
}
