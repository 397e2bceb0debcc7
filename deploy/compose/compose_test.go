package compose

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of the Compose specification these files use.
// Decoding is strict (KnownFields), so a misspelt key fails the test
// instead of being ignored by the test and by Compose alike.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]service        `yaml:"services"`
	Volumes  map[string]map[string]any `yaml:"volumes"`
	// Extension fields (x-...) hold the anchors services share.
	Extensions map[string]any `yaml:",inline"`
}

type service struct {
	Image           string               `yaml:"image"`
	Build           *build               `yaml:"build"`
	Restart         string               `yaml:"restart"`
	User            string               `yaml:"user"`
	Command         []string             `yaml:"command"`
	Ports           []string             `yaml:"ports"`
	Environment     map[string]string    `yaml:"environment"`
	Volumes         []string             `yaml:"volumes"`
	DependsOn       map[string]dependsOn `yaml:"depends_on"`
	Healthcheck     *healthcheck         `yaml:"healthcheck"`
	StopGracePeriod string               `yaml:"stop_grace_period"`
}

type build struct {
	Context    string            `yaml:"context"`
	Dockerfile string            `yaml:"dockerfile"`
	Args       map[string]string `yaml:"args"`
}

type dependsOn struct {
	Condition string `yaml:"condition"`
}

type healthcheck struct {
	Test        []string `yaml:"test"`
	Interval    string   `yaml:"interval"`
	Timeout     string   `yaml:"timeout"`
	Retries     int      `yaml:"retries"`
	StartPeriod string   `yaml:"start_period"`
}

func load(t *testing.T, name string) *composeFile {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k := range f.Extensions {
		if !strings.HasPrefix(k, "x-") {
			t.Errorf("%s: unknown top-level key %q", name, k)
		}
	}
	return &f
}

// floeBinary is where the image keeps floe (deploy/Dockerfile's
// ENTRYPOINT; deploy/image's test holds the Dockerfile to it).
const floeBinary = "/usr/local/bin/floe"

// mount is one "source:target[:mode]" volume of a service.
type mount struct{ source, target string }

func mounts(s service) []mount {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		out = append(out, mount{parts[0], parts[1]})
	}
	return out
}

func duration(t *testing.T, what, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return d
}

// checkFloe checks what every floe service needs: the image built from
// deploy/Dockerfile, a readiness healthcheck through the binary, a token
// file that is mounted where FLOE_AUTH_TOKEN_FILE says and exists, the
// warehouse volume, and a stop grace period longer than the drain delay
// and shutdown timeout together.
func checkFloe(t *testing.T, f *composeFile, name string) {
	t.Helper()
	s, ok := f.Services[name]
	if !ok {
		t.Fatalf("no service %s", name)
	}
	if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
		t.Errorf("%s: build %+v, want deploy/Dockerfile", name, s.Build)
	} else if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
		t.Errorf("%s: build context %s: %v", name, s.Build.Context, err)
	}
	if hc := s.Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"CMD", floeBinary, "healthcheck", "--ready"}) {
		t.Errorf("%s: healthcheck %+v, want CMD %s healthcheck --ready (the image has no shell)", name, s.Healthcheck, floeBinary)
	}
	ms := mounts(s)
	tokens := s.Environment["FLOE_AUTH_TOKEN_FILE"]
	i := slices.IndexFunc(ms, func(m mount) bool { return m.target == tokens })
	if tokens == "" || i < 0 {
		t.Errorf("%s: FLOE_AUTH_TOKEN_FILE %q is not a mount target of %v", name, tokens, ms)
	} else if _, err := os.Stat(ms[i].source); err != nil {
		t.Errorf("%s: token file: %v", name, err)
	}
	if !slices.ContainsFunc(ms, func(m mount) bool { return m.target == "/warehouse" && f.Volumes[m.source] != nil }) {
		t.Errorf("%s: no named volume at /warehouse: %v", name, ms)
	}
	grace := duration(t, name+" stop_grace_period", s.StopGracePeriod)
	need := duration(t, name+" FLOE_DRAIN_DELAY", s.Environment["FLOE_DRAIN_DELAY"]) + duration(t, name+" FLOE_SHUTDOWN_TIMEOUT", s.Environment["FLOE_SHUTDOWN_TIMEOUT"])
	if grace <= need {
		t.Errorf("%s: stop_grace_period %s does not cover drain delay + shutdown timeout (%s): Compose would kill floe mid-drain", name, grace, need)
	}
	if s.Environment["FLOE_DEV"] != "" {
		t.Errorf("%s: dev mode in a compose file (it only listens on loopback anyway)", name)
	}
}

func TestSingle(t *testing.T) {
	f := load(t, "single.yaml")
	checkFloe(t, f, "floe")
	s := f.Services["floe"]
	if !slices.Equal(s.Ports, []string{"8181:8181"}) {
		t.Errorf("ports %v, want 8181:8181", s.Ports)
	}
	if !slices.ContainsFunc(mounts(s), func(m mount) bool { return m.target == "/data" && f.Volumes[m.source] != nil }) {
		t.Errorf("the embedded store is not on a named volume at /data: %v", s.Volumes)
	}
	if s.Environment["FLOE_STORE"] != "" {
		t.Errorf("the single-node file sets FLOE_STORE=%s", s.Environment["FLOE_STORE"])
	}
}

var replicaNames = []string{"floe-1", "floe-2", "floe-3"}

func TestReplicas(t *testing.T) {
	f := load(t, "replicas.yaml")
	pg, ok := f.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	if pg.Healthcheck == nil || !slices.Contains(pg.Healthcheck.Test, "pg_isready") {
		t.Errorf("postgres healthcheck %+v, want pg_isready", pg.Healthcheck)
	}
	first := f.Services[replicaNames[0]]
	for _, name := range replicaNames {
		checkFloe(t, f, name)
		s := f.Services[name]
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %v: clients go through the load balancer", name, s.Ports)
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s does not wait for a healthy postgres: %+v", name, s.DependsOn)
		}
		dsn, err := url.Parse(s.Environment["FLOE_STORE"])
		if err != nil || dsn.Scheme != "postgres" || dsn.Hostname() != "postgres" || dsn.User.Username() != pg.Environment["POSTGRES_USER"] ||
			strings.TrimPrefix(dsn.Path, "/") != pg.Environment["POSTGRES_DB"] {
			t.Errorf("%s: FLOE_STORE %q does not name the postgres service's user and database (%v)", name, s.Environment["FLOE_STORE"], err)
		} else if p, _ := dsn.User.Password(); p != pg.Environment["POSTGRES_PASSWORD"] {
			t.Errorf("%s: FLOE_STORE's password is not POSTGRES_PASSWORD", name)
		}
		if !slices.Equal(s.Volumes, first.Volumes) || s.Environment["FLOE_STORE"] != first.Environment["FLOE_STORE"] {
			t.Errorf("%s differs from %s: the replicas must share the store and the warehouse", name, replicaNames[0])
		}
		if slices.ContainsFunc(mounts(s), func(m mount) bool { return m.target == "/data" }) {
			t.Errorf("%s mounts /data: the replicas keep no local store", name)
		}
	}

	lb, ok := f.Services["lb"]
	if !ok {
		t.Fatal("no lb service")
	}
	if !slices.Contains(lb.Ports, "8181:8181") {
		t.Errorf("lb ports %v, want 8181:8181", lb.Ports)
	}
	for _, name := range replicaNames {
		if lb.DependsOn[name].Condition != "service_healthy" {
			t.Errorf("lb does not wait for a healthy %s", name)
		}
	}
	var cfgFile string
	for _, m := range mounts(lb) {
		if strings.HasSuffix(m.target, "haproxy.cfg") {
			cfgFile = m.source
		}
	}
	if cfgFile == "" {
		t.Fatalf("lb mounts no haproxy.cfg: %v", lb.Volumes)
	}
	checkHAProxy(t, cfgFile, "8181")

	client, ok := f.Services["client"]
	if !ok {
		t.Fatal("no client service")
	}
	if u, err := url.Parse(client.Environment["FLOE_URI"]); err != nil || u.Host != "lb:8181" {
		t.Errorf("client FLOE_URI %q, want the load balancer lb:8181", client.Environment["FLOE_URI"])
	}
	if client.DependsOn["lb"].Condition == "" {
		t.Error("client does not depend on lb")
	}
	// PyIceberg writes the data files itself: it must see the warehouse
	// at the path floe gives it, and the script must exist.
	if !slices.Contains(client.Volumes, "floe-warehouse:/warehouse") || !slices.Contains(first.Volumes, "floe-warehouse:/warehouse") {
		t.Errorf("the client and the replicas do not share floe-warehouse at /warehouse: %v, %v", client.Volumes, first.Volumes)
	}
	script := ""
	for _, m := range mounts(client) {
		if strings.HasSuffix(m.source, ".py") {
			script = m.source
			if !strings.Contains(strings.Join(client.Command, " "), m.target) {
				t.Errorf("client command %q does not run %s", client.Command, m.target)
			}
		}
	}
	if _, err := os.Stat(script); script == "" || err != nil {
		t.Errorf("client script %q: %v", script, err)
	}
	if !strings.Contains(strings.Join(client.Command, " "), "pyiceberg==") {
		t.Errorf("client command %q does not install a pinned pyiceberg", client.Command)
	}
}

// checkHAProxy reads the load balancer's configuration: a frontend bound
// to port, whose default backend balances over exactly the three
// replicas at their service names, health-checked on /readyz.
func checkHAProxy(t *testing.T, file, port string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]string{} // "frontend floe" -> its lines
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			cur = strings.Join(strings.Fields(line), " ")
			sections[cur] = nil
			continue
		}
		sections[cur] = append(sections[cur], strings.Join(strings.Fields(line), " "))
	}
	var backend string
	for name, lines := range sections {
		if strings.HasPrefix(name, "frontend ") && slices.Contains(lines, "bind :"+port) {
			for _, l := range lines {
				if b, ok := strings.CutPrefix(l, "default_backend "); ok {
					backend = b
				}
			}
		}
	}
	lines, ok := sections["backend "+backend]
	if !ok {
		t.Fatalf("%s: no frontend bound to :%s with a default backend (sections %v)", file, port, sections)
	}
	if !slices.Contains(lines, "option httpchk GET /readyz") || !slices.Contains(lines, "http-check expect status 200") {
		t.Errorf("%s: backend %s is not health-checked on /readyz: %q", file, backend, lines)
	}
	server := regexp.MustCompile(`^server (\S+) (\S+) (.*)$`)
	var servers []string
	for _, l := range lines {
		m := server.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[2] != m[1]+":8181" || !strings.Contains(m[3], "check") {
			t.Errorf("%s: %q: want server NAME NAME:8181 check", file, l)
		}
		servers = append(servers, m[1])
	}
	if !slices.Equal(servers, replicaNames) {
		t.Errorf("%s: backend %s balances over %v, want %v", file, backend, servers, replicaNames)
	}
}
