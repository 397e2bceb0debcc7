package eventhooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(" from-file \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(body string) string {
		p := filepath.Join(dir, "hooks.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(k string) string { return map[string]string{"DQ_SECRET": "from-env"}[k] }
	source, subs, err := eventhooks.LoadConfig(write(`{"source": "https://floe.example/lake", "subscriptions": [
		{"name": "dq", "url": "https://dq.example/hook", "secretEnv": "DQ_SECRET", "principal": "svc-dq", "groups": ["quality"],
		 "refs": ["main", "etl/*"], "types": ["table.*", "commit"], "namespaces": ["db.sales"], "tables": ["db.sales.orders"],
		 "start": "beginning", "timeout": "3s", "backoff": "2s", "maxBackoff": "1m", "maxAttempts": 5},
		{"name": "sync", "url": "http://127.0.0.1:9000/", "secretFile": "`+secretFile+`", "principal": "svc-sync"}]}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if source != "https://floe.example/lake" || len(subs) != 2 {
		t.Fatalf("source %q, %d subscriptions", source, len(subs))
	}
	dq := subs[0]
	if dq.Secret != "from-env" || !dq.FromStart || dq.Timeout != 3*time.Second || dq.Backoff != 2*time.Second || dq.MaxBackoff != time.Minute ||
		dq.MaxAttempts != 5 || len(dq.Filter.Types) != 5 || dq.Filter.Types[4] != changefeed.CommitMade ||
		strings.Join(dq.Filter.Namespaces[0], "/") != "db/sales" || strings.Join(dq.Filter.Tables[0], "/") != "db/sales/orders" {
		t.Fatalf("dq is %+v", dq)
	}
	if subs[1].Secret != "from-file" || subs[1].FromStart {
		t.Fatalf("sync is %+v", subs[1])
	}
	for _, bad := range []struct{ body, want string }{
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "NONE", "principal": "p"}]}`, "secret is empty"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "secretFile": "f", "principal": "p"}]}`, "exactly one"},
		{`{"subscriptions": [{"name": "a", "url": "ftp://x/", "secretEnv": "DQ_SECRET", "principal": "p"}]}`, "not an http(s) URL"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET"}]}`, "principal is needed"},
		{`{"subscriptions": [{"name": "a b", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p"}]}`, "name"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p", "types": ["tabel.*"]}]}`, "invalid event type"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p", "start": "yesterday"}]}`, "start"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p"}, {"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p"}]}`, "used twice"},
		{`{"subscriptions": [{"name": "a", "url": "https://x/", "secretEnv": "DQ_SECRET", "principal": "p", "retries": 3}]}`, "unknown field"},
	} {
		if _, _, err := eventhooks.LoadConfig(write(bad.body), env); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v; want one saying %q", bad.body, err, bad.want)
		}
	}
}

// TestDeployExample: deploy/event-webhooks.json loads (its secret file
// replaced by one of the test's).
func TestDeployExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/event-webhooks.json")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "dq.secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(raw), "/etc/floe/hooks/dq.secret", secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, subs, err := eventhooks.LoadConfig(p, func(string) string { return "y" })
	if err != nil || len(subs) != 2 {
		t.Fatalf("%d subscriptions, %v", len(subs), err)
	}
}
