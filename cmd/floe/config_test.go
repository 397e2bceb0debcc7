package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// printConfig runs `floe serve --print-config args...` in process and
// returns what it printed, parsed, and the raw text.
func printConfig(t *testing.T, args ...string) (map[string]any, string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"serve", "--print-config"}, args...))
	if err := root.Execute(); err != nil {
		return nil, out.String(), err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &cfg); err != nil {
		t.Fatalf("--print-config printed no YAML: %v\n%s", err, out.String())
	}
	return cfg, out.String(), nil
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "floe.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func group(t *testing.T, cfg map[string]any, name string) map[string]any {
	t.Helper()
	g, ok := cfg[name].(map[string]any)
	if !ok {
		t.Fatalf("printed configuration has no group %s: %v", name, cfg)
	}
	return g
}

func TestConfigPrecedence(t *testing.T) {
	path := writeConfig(t, `
addr: 127.0.0.1:9000
data-dir: /from/file
log:
  level: warn
  format: json
gc:
  interval: 2h
  grace: 96h
allowed-location: [/file/a, /file/b]
`)
	t.Setenv("FLOE_GC_GRACE", "100h")   // env over file
	t.Setenv("FLOE_LOG_LEVEL", "error") // flag over env over file
	t.Setenv("FLOE_DRAIN_DELAY", "7s")  // env over default
	cfg, text, err := printConfig(t, "--config", path, "--log-level", "debug", "--addr", "127.0.0.1:9100")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got, want any
		what      string
	}{
		{cfg["addr"], "127.0.0.1:9100", "flag over file"},
		{cfg["data-dir"], "/from/file", "file over default"},
		{group(t, cfg, "log")["level"], "debug", "flag over env and file"},
		{group(t, cfg, "log")["format"], "json", "file, nested"},
		{group(t, cfg, "gc")["interval"], "2h0m0s", "file, nested"},
		{group(t, cfg, "gc")["grace"], "100h0m0s", "env over file"},
		{cfg["drain-delay"], "7s", "env over default"},
		{cfg["warehouse-name"], "lake", "default"},
		{cfg["max-body-bytes"], 16 << 20, "default, typed"},
		{cfg["dev"], false, "default, typed"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v (%T), want %v\n%s", c.what, c.got, c.got, c.want, text)
		}
	}
	if got := cfg["allowed-location"]; len(got.([]any)) != 2 {
		t.Errorf("allowed-location from the file's list: got %v", got)
	}
	// Each value names where it came from.
	for _, want := range []string{"addr: 127.0.0.1:9100 # --addr", "grace: 100h0m0s # FLOE_GC_GRACE", "interval: 2h0m0s # " + path + ":8"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed configuration lacks %q:\n%s", want, text)
		}
	}

	// A FLOE_* list replaces the file's list rather than adding to it.
	t.Setenv("FLOE_ALLOWED_LOCATION", "/env/c")
	cfg, _, err = printConfig(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg["allowed-location"].([]any); len(got) != 1 || got[0] != "/env/c" {
		t.Errorf("allowed-location from FLOE_ALLOWED_LOCATION over the file: got %v", got)
	}

	// FLOE_CONFIG names the file when --config does not.
	t.Setenv("FLOE_CONFIG", path)
	cfg, _, err = printConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["data-dir"] != "/from/file" {
		t.Errorf("FLOE_CONFIG: data-dir %v, want the file's", cfg["data-dir"])
	}
}

func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"unknown key", "addr: 127.0.0.1:1\ngc:\n  intervall: 1h\n", []string{":3: unknown key gc.intervall", "--gc-intervall"}},
		{"unknown top-level key", "\n\nlisten: x\n", []string{":3: unknown key listen"}},
		{"wrong type: duration", "gc:\n  interval: 5\n", []string{":2: gc.interval: invalid value \"5\" for --gc-interval (duration)"}},
		{"wrong type: bool", "log-level: info\ndev: maybe\n", []string{":2: dev: invalid value \"maybe\" for --dev (bool)"}},
		{"wrong type: integer", "max-body-bytes: 16MiB\n", []string{":1: max-body-bytes: invalid value \"16MiB\" for --max-body-bytes (int64)"}},
		{"list for a value", "log:\n  format: [json]\n", []string{":2: log.format: --log-format takes one string, not a list"}},
		{"mapping for a value", "data-dir:\n  path: /x\n", []string{":2: data-dir: --data-dir takes one string, not a mapping"}},
		{"value for a group", "\ngc: 1h\n", []string{":2: gc is a group of settings"}},
		{"set twice", "gc-interval: 1h\ngc:\n  interval: 2h\n", []string{":3: gc.interval sets --gc-interval again", ":1"}},
		{"not a mapping", "- addr\n", []string{":1: the config file must be a mapping"}},
		{"client flag", "server: http://x\n", []string{":1: unknown key server"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.file)
			_, _, err := printConfig(t, "--config", path)
			if err == nil {
				t.Fatal("a bad config file was accepted")
			}
			for _, want := range append(c.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestPrintConfigRedactsSecrets(t *testing.T) {
	path := writeConfig(t, `
warehouse: s3://bucket/wh
s3:
  access-key-id: AKIAEXAMPLE
  secret-access-key: file-secret-value
policy:
  bundle-url: https://bundle-user:url-password@bundles.example/floe.tar.gz
auth:
  token-file: /etc/floe/tokens.json
`)
	t.Setenv("FLOE_S3_SECRET_ACCESS_KEY", "env-secret-value")
	cfg, text, err := printConfig(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"env-secret-value", "file-secret-value", "url-password"} {
		if strings.Contains(text, secret) {
			t.Errorf("--print-config shows the secret %q:\n%s", secret, text)
		}
	}
	if got := group(t, cfg, "s3")["secret-access-key"]; got != redacted {
		t.Errorf("s3.secret-access-key printed as %v, want %s", got, redacted)
	}
	if got := group(t, cfg, "policy")["bundle-url"]; got != "https://bundle-user:xxxxx@bundles.example/floe.tar.gz" {
		t.Errorf("policy.bundle-url printed as %v", got)
	}
	// Paths to secrets and non-secret ids stay readable.
	if got := group(t, cfg, "auth")["token-file"]; got != "/etc/floe/tokens.json" {
		t.Errorf("auth.token-file printed as %v", got)
	}
	if got := group(t, cfg, "s3")["access-key-id"]; got != "AKIAEXAMPLE" {
		t.Errorf("s3.access-key-id printed as %v", got)
	}
	// An empty secret prints as empty: nothing is set.
	t.Setenv("FLOE_S3_SECRET_ACCESS_KEY", "")
	cfg, _, err = printConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := group(t, cfg, "s3")["secret-access-key"]; got != "" {
		t.Errorf("an unset secret printed as %v", got)
	}
}

// Connection strings (a database backend's DSN, whatever flag holds it)
// lose their password, in URL and in key=value form.
func TestRedactValue(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://floe:pg-pass@db:5432/floe?sslmode=require": "postgres://floe:xxxxx@db:5432/floe?sslmode=require",
		"host=db user=floe password=pg-pass dbname=floe":       "host=db user=floe password=" + redacted + " dbname=floe",
		"host=db password='pg pass' dbname=floe":               "host=db password=" + redacted + " dbname=floe",
		"postgres://db/floe?user=floe&password=pg-pass&x=1":    "postgres://db/floe?user=floe&password=" + redacted + "&x=1",
		"postgres://floe@db/floe":                              "postgres://floe@db/floe",
		"/var/lib/floe/data":                                   "/var/lib/floe/data",
	} {
		if got := redactValue(in); got != want {
			t.Errorf("redactValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConfigExample loads the annotated example in deploy/, so it stays
// in step with the flags: a key no flag has any more fails here.
func TestConfigExample(t *testing.T) {
	path := filepath.Join("..", "..", "deploy", "floe.yaml")
	cfg, text, err := printConfig(t, "--config", path)
	if err != nil {
		t.Fatalf("deploy/floe.yaml: %v", err)
	}
	if cfg["data-dir"] != "/var/lib/floe/data" || group(t, cfg, "gc")["interval"] != "24h0m0s" || group(t, cfg, "auth")["oauth-token-ttl"] != "1h0m0s" ||
		cfg["event-webhooks"] != "/etc/floe/event-webhooks.json" {
		t.Errorf("deploy/floe.yaml's settings did not take:\n%s", text)
	}
}
