package replicas

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/server/assemble"
)

// childEnv, when set, makes the test binary a floe replica instead of a
// test run (see TestMain): FLOE_STORE, the warehouse URL and a file to
// write the listening address to are in childEnv's value, tab-separated.
const childEnv = "FLOE_REPLICAS_CHILD"

// serveChild is a replica process, as `floe serve --dev --store ...` is,
// until it is killed.
func serveChild() int {
	parts := strings.Split(os.Getenv(childEnv), "\t")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "replica child: bad", childEnv)
		return 2
	}
	dsn, wh, addrFile := parts[0], parts[1], parts[2]
	cfg := assemble.Config{
		HTTP:     server.Settings{Addr: "127.0.0.1:0"},
		DataDir:  filepath.Join(filepath.Dir(addrFile), "data"),
		Store:    dsn,
		Security: assemble.Security{Authn: assemble.Authn{Dev: true}},
		Iceberg:  assemble.Iceberg{Warehouses: []icebergrest.Warehouse{{Name: "lake", Location: wh}}},
	}
	ctx := context.Background()
	p, err := assemble.Build(ctx, cfg, assemble.Deps{}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica child:", err)
		return 1
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.HTTP.Addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica child:", err)
		return 1
	}
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()), 0o600); err == nil {
		err = os.Rename(addrFile+".tmp", addrFile)
	}
	if err := p.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "replica child:", err)
		return 1
	}
	return 0
}

// startChild starts a replica process and returns it with its base URL.
func (l *lake) startChild(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+l.dsn+"\t"+l.wh+"\t"+addrFile)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			return cmd, "http://" + string(b)
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica process did not start within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReplicaKilledMidCommit kills a replica process with SIGKILL while
// writers commit through it nonstop: no commit it acknowledged is lost,
// nothing is torn (every append there has both its ids), and the other
// replicas go on committing to the same table.
func TestReplicaKilledMidCommit(t *testing.T) {
	l := newLake(t, 2)
	ctx := t.Context()
	cat := l.catalog(0)
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("db"), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.createTable(cat, "db", "events"); err != nil {
		t.Fatal(err)
	}
	id := catalog.ToIdentifier("db", "events")
	child, url := l.startChild(t)
	var cats []*rest.Catalog
	for range 4 {
		c, err := rest.NewCatalog(ctx, "floe", url, rest.WithWarehouseLocation("lake"))
		if err != nil {
			t.Fatal(err)
		}
		cats = append(cats, c)
	}
	w := startWriters(append(cats, l.catalog(1)), id, 1000)
	w.waitAcks(t, 12)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	w.waitAcks(t, w.acks()+4) // the in-process replica's writer goes on
	acked, tried := w.stop()
	t.Logf("writers: %d appends acknowledged, %d attempted", len(acked)/2, len(tried)/2)
	if _, err := appendIDs(ctx, l.catalog(0), id, seq(0, 4)); err != nil {
		t.Fatalf("append after the kill: %v", err)
	}
	for r := range l.replicas {
		checkAppends(t, l.catalog(r), id, append(seq(0, 4), acked...), tried, func(v int64) bool { return v < 4 })
	}
}
