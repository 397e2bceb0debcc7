package mergecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "rowcount.secret")
	if err := os.WriteFile(secret, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The example file, with the secret file it names moved here.
	raw, err := os.ReadFile("../../deploy/merge-checks.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "checks.json")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "/etc/floe/checks/rowcount.secret", secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLOE_RECONCILE_SECRET": "other"}
	cfg, checks, err := LoadConfig(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defaults[PropMaxDecreasePct] != "50" || len(checks) != 2 {
		t.Fatalf("config %+v checks %+v", cfg, checks)
	}
	want := ExternalCheck{Name: "dq-rowcount", URL: "http://127.0.0.1:8900/", Secret: "s3cr3t", Timeout: time.Minute, Retries: 2, Backoff: time.Second}
	if checks[0] != want {
		t.Errorf("check 1 %+v, want %+v", checks[0], want)
	}
	if c := checks[1]; c.Secret != "other" || c.Timeout != 5*time.Minute || c.Retries != 1 || c.Backoff != 0 {
		t.Errorf("check 2 %+v", c)
	}
	if _, err := New(Options{Store: nopStore{}, External: checks, Defaults: cfg.Defaults}); err != nil {
		t.Fatalf("the example does not configure a validator: %v", err)
	}

	for name, body := range map[string]string{
		"unknown field":   `{"checks": [], "extra": 1}`,
		"no secret":       `{"checks": [{"name": "a", "url": "http://x"}]}`,
		"two secrets":     `{"checks": [{"name": "a", "url": "http://x", "secretEnv": "A", "secretFile": "f"}]}`,
		"empty secret":    `{"checks": [{"name": "a", "url": "http://x", "secretEnv": "UNSET"}]}`,
		"bad timeout":     `{"checks": [{"name": "a", "url": "http://x", "secretEnv": "FLOE_RECONCILE_SECRET", "timeout": "soon"}]}`,
		"negative retry":  `{"checks": [{"name": "a", "url": "http://x", "secretEnv": "FLOE_RECONCILE_SECRET", "retries": -1}]}`,
		"not http":        `{"checks": [{"name": "a", "url": "file:///x", "secretEnv": "FLOE_RECONCILE_SECRET"}]}`,
		"foreign default": `{"defaults": {"write.format": "orc"}}`,
	} {
		p := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadConfig(p, func(k string) string { return env[k] }); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// retries 0 means none.
	p := filepath.Join(dir, "none.json")
	_ = os.WriteFile(p, []byte(`{"checks": [{"name": "a", "url": "http://x", "secretEnv": "FLOE_RECONCILE_SECRET", "retries": 0}]}`), 0o600)
	if _, checks, err := LoadConfig(p, func(k string) string { return env[k] }); err != nil || checks[0].Retries != -1 {
		t.Errorf("retries 0: %+v %v", checks, err)
	}
}
