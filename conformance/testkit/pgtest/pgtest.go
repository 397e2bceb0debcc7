package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RequireEnv names the variable that turns a missing PostgreSQL from a
// skip into a failure.
const RequireEnv = "FLOE_REQUIRE_POSTGRES"

// Cluster is one running PostgreSQL cluster owned by the test process.
type Cluster struct {
	bin  string // directory holding initdb, pg_ctl and postgres
	dir  string // the cluster's data directory (and socket directory)
	port int
	cred *syscall.Credential // run as this user when we are root (initdb refuses root)
}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres:
// $FLOE_PG_BIN, else the newest /usr/lib/postgresql/*/bin, else the
// directory of initdb on PATH.
func FindBinaries() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("FLOE_PG_BIN"); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("FLOE_PG_BIN=%s does not hold initdb, pg_ctl and postgres", dir)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL binaries not found (initdb, pg_ctl, postgres); run conformance/testkit/pgtest/install.sh")
}

// Start creates and starts a new cluster.
func Start() (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user to run the cluster as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.dir, err = os.MkdirTemp("", "floe-pgtest-"); err != nil {
		return nil, err
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return nil, errors.Join(err, os.RemoveAll(c.dir))
		}
	}
	data := filepath.Join(c.dir, "data")
	// --no-sync only skips flushing initdb's own files; the running
	// cluster has fsync on.
	if out, err := c.run("initdb", "-D", data, "-U", "floe", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, errors.Join(fmt.Errorf("initdb: %w\n%s", err, out), os.RemoveAll(c.dir))
	}
	conf := "\n# floe pgtest\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '" + c.dir + "'\n" +
		"fsync = on\nsynchronous_commit = on\nmax_connections = 400\nshared_buffers = 128MB\n"
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(c.dir))
	}
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err == nil {
			err = c.StartServer()
		}
		if err == nil {
			c.watch()
			return c, nil
		}
		if attempt == 3 {
			return nil, errors.Join(err, os.RemoveAll(c.dir))
		}
	}
}

// watch starts a watchdog process that stops the server and removes the
// cluster's files once this process is gone, however it ended: a test
// binary that panics or is killed never reaches Stop, and PostgreSQL,
// started by pg_ctl, would outlive it. It runs in its own process group,
// so a ^C to the test does not take it down first, and as the cluster's
// user, so it can run pg_ctl.
func (c *Cluster) watch() {
	script := `while [ -d /proc/` + strconv.Itoa(os.Getpid()) + ` ]; do sleep 2; done
if [ -d "$1/data" ]; then "$2/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null 2>&1; fi
rm -rf "$1"`
	cmd := exec.Command("/bin/sh", "-c", script, "pgtest-watchdog", c.dir, c.bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	if err := cmd.Start(); err == nil {
		_ = cmd.Process.Release()
	}
}

// StartServer starts the cluster's server (again, after StopServer).
func (c *Cluster) StartServer() error {
	out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "server.log"),
		"-o", "-p "+strconv.Itoa(c.port), "-w", "-t", "120", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, tail(log))
	}
	return nil
}

// StopServer stops the server; mode is pg_ctl's: "fast" rolls back open
// transactions, "immediate" is a crash (recovery on the next start).
func (c *Cluster) StopServer(mode string) error {
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", mode, "-w", "-t", "120", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the server and removes the cluster's files.
func (c *Cluster) Stop() error {
	return errors.Join(c.StopServer("fast"), os.RemoveAll(c.dir))
}

// Dir is the cluster's directory (data/, server.log).
func (c *Cluster) Dir() string { return c.dir }

// Bin is the directory of the PostgreSQL binaries, where pg_test_fsync
// also lives.
func (c *Cluster) Bin() string { return c.bin }

// DSN is the address of a database in the cluster.
func (c *Cluster) DSN(database string) string {
	return fmt.Sprintf("postgres://floe@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

// Schema creates schema name (if missing) in the postgres database and
// returns a DSN whose search_path is that schema: a private store that is
// much cheaper to make than a database.
func (c *Cluster) Schema(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Two callers creating one schema at once can both pass IF NOT EXISTS
	// and collide in the catalog: the loser finds it made on its retry.
	for attempt := 0; ; attempt++ {
		_, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{name}.Sanitize())
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "23505" && attempt < 3 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create schema %s: %w", name, err)
		}
		break
	}
	return c.DSN("postgres") + "&search_path=" + name, nil
}

// Database creates database name and returns its DSN.
func (c *Cluster) Database(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// SchemaName turns any string (a test's temp dir, say) into a schema name.
func SchemaName(s string) string {
	h := sha256.Sum256([]byte(s))
	return "t_" + hex.EncodeToString(h[:10])
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, tool), args...)
	cmd.Dir = os.TempDir()
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// pg_ctl start leaves the server running after it exits, holding
	// whatever its output is: a pipe would make Run wait for the server,
	// so output goes to a file.
	f, err := os.CreateTemp("", "floe-pgtest-out-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, _ := os.ReadFile(f.Name())
	return out, err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// Main is a test package's TestMain body: it starts one cluster for the
// package, stores it in *c, runs the tests and stops the cluster. With the
// binaries missing it leaves *c nil, so that Need skips, unless
// FLOE_REQUIRE_POSTGRES is set, when it fails the run.
func Main(m *testing.M, c **Cluster) int {
	if _, err := FindBinaries(); err != nil {
		if os.Getenv(RequireEnv) != "" {
			fmt.Fprintf(os.Stderr, "pgtest: %s is set but %v\n", RequireEnv, err)
			return 1
		}
		return m.Run()
	}
	cl, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: start PostgreSQL: %v\n", err)
		return 1
	}
	*c = cl
	code := m.Run()
	if err := cl.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop PostgreSQL: %v\n", err)
	}
	return code
}

// Need returns c, or skips the test when PostgreSQL is not installed (Main
// left c nil).
func Need(t testing.TB, c *Cluster) *Cluster {
	t.Helper()
	if c == nil {
		t.Skip("PostgreSQL is not installed (set " + RequireEnv + " to fail instead; conformance/testkit/pgtest/install.sh installs it)")
	}
	return c
}

// Lazy is a package's cluster started by the first test that needs it,
// so the package's other tests do not pay for it; LazyMain stops it.
type Lazy struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Need starts the cluster if no test has yet and returns it, or skips the
// test without the binaries (fails it when FLOE_REQUIRE_POSTGRES is set).
func (l *Lazy) Need(t testing.TB) *Cluster {
	t.Helper()
	l.once.Do(func() {
		if _, err := FindBinaries(); err != nil {
			if os.Getenv(RequireEnv) != "" {
				l.err = err
			}
			return
		}
		l.c, l.err = Start()
	})
	if l.err != nil {
		t.Fatalf("PostgreSQL: %v", l.err)
	}
	return Need(t, l.c)
}

// LazyMain is a test package's TestMain body for a Lazy cluster: it runs
// the tests, then stops the cluster if one started.
func LazyMain(m *testing.M, l *Lazy) int {
	code := m.Run()
	if l.c != nil {
		if err := l.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop PostgreSQL: %v\n", err)
		}
	}
	return code
}
