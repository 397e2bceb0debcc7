package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// helmVersion is the helm the test builds; HELM names another binary.
const helmVersion = "v3.22.0"

const (
	chart    = "floe"
	repoRoot = "../.."
	// imageUID is the image's user (deploy/image, deploy/Dockerfile).
	imageUID = 65532
)

// helmBinary finds helm: $HELM, or .cache/helm/<version>/helm, built
// there from the Go module proxy when missing (a few minutes, once).
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".cache", "helm", helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	// Build beside the final place, then rename: a build that dies
	// halfway leaves no binary that looks finished.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Logf("building helm %s from the Go module proxy into %s (once)", helmVersion, dir)
	start := time.Now()
	cmd := exec.Command(goTool, "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install helm: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built helm in %s", time.Since(start).Round(time.Second))
	return bin
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No repositories, plugins or kube config of the machine's user.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %v: %w\n%s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

var modes = []string{"embedded", "scaleout"}

func valuesFile(mode string) string {
	return filepath.Join(chart, "ci", mode+"-values.yaml")
}

func TestLint(t *testing.T) {
	for _, mode := range modes {
		if out, err := helm(t, "lint", "--strict", chart, "-f", valuesFile(mode)); err != nil {
			t.Errorf("%s: %v\n%s", mode, err, out)
		}
	}
}

// manifests is a rendered chart: kind -> name -> object.
type manifests map[string]map[string]map[string]any

func render(t *testing.T, args ...string) manifests {
	t.Helper()
	out, err := helm(t, append([]string{"template", "t", chart}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	ms := manifests{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, out)
		}
		if doc == nil {
			continue
		}
		kind, name := str(doc, "kind"), str(doc, "metadata", "name")
		if ms[kind] == nil {
			ms[kind] = map[string]map[string]any{}
		}
		if _, dup := ms[kind][name]; dup {
			t.Errorf("two %s named %s", kind, name)
		}
		ms[kind][name] = doc
	}
	return ms
}

// get walks maps by key and lists by index ("0").
func get(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			var i int
			if _, err := fmt.Sscanf(p, "%d", &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := get(v, path...).(string)
	return s
}

func list(v any, path ...string) []any {
	l, _ := get(v, path...).([]any)
	return l
}

func num(v any, path ...string) int {
	n, _ := get(v, path...).(int)
	return n
}

// env is a container's environment: plain values, and secretKeyRefs as
// "secret:NAME/KEY".
func env(c any) map[string]string {
	out := map[string]string{}
	for _, e := range list(c, "env") {
		name := str(e, "name")
		if ref := get(e, "valueFrom", "secretKeyRef"); ref != nil {
			out[name] = "secret:" + str(ref, "name") + "/" + str(ref, "key")
		} else {
			out[name] = str(e, "value")
		}
	}
	return out
}

func named(items []any, name string) any {
	for _, it := range items {
		if str(it, "name") == name {
			return it
		}
	}
	return nil
}

// serveFlags are the flag names `floe serve` declares, read from
// cmd/floe's sources: a FLOE_* variable the chart sets must be one.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "cmd", "floe", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`\.(?:String|Bool|Duration|Int|Int64|StringSlice|Var)\w*\(&?[\w.]+, "([a-z0-9-]+)"`)
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			out["FLOE_"+strings.ToUpper(strings.ReplaceAll(string(m[1]), "-", "_"))] = true
		}
	}
	for _, must := range []string{"FLOE_DRAIN_DELAY", "FLOE_AUTH_TOKEN_FILE", "FLOE_POLICY_BUNDLE_URL"} {
		if !out[must] {
			t.Fatalf("read no %s from cmd/floe: the flag declarations changed shape (found %d)", must, len(out))
		}
	}
	return out
}

// checkPod checks the pod template both modes share and returns the
// floe container.
func checkPod(t *testing.T, ms manifests, pod any) any {
	t.Helper()
	spec := get(pod, "spec")
	c := named(list(spec, "containers"), "floe")
	if c == nil {
		t.Fatal("no floe container")
	}
	port := named(list(c, "ports"), "http")
	if num(port, "containerPort") != 8181 {
		t.Errorf("container port http = %v, want 8181", port)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if str(c, probe, "httpGet", "path") != path || str(c, probe, "httpGet", "port") != "http" {
			t.Errorf("%s = %v, want GET %s on port http", probe, get(c, probe), path)
		}
	}
	e := env(c)
	drain, err1 := time.ParseDuration(e["FLOE_DRAIN_DELAY"])
	shutdown, err2 := time.ParseDuration(e["FLOE_SHUTDOWN_TIMEOUT"])
	if err := errors.Join(err1, err2); err != nil || drain <= 0 || shutdown <= 0 {
		t.Errorf("FLOE_DRAIN_DELAY %q, FLOE_SHUTDOWN_TIMEOUT %q: %v", e["FLOE_DRAIN_DELAY"], e["FLOE_SHUTDOWN_TIMEOUT"], err)
	}
	grace := time.Duration(num(spec, "terminationGracePeriodSeconds")) * time.Second
	if grace <= drain+shutdown {
		t.Errorf("terminationGracePeriodSeconds %s does not exceed drain delay %s + shutdown timeout %s: the kubelet kills floe mid-drain", grace, drain, shutdown)
	}
	if e["FLOE_ADDR"] != "0.0.0.0:8181" {
		t.Errorf("FLOE_ADDR %q: the probes and the Service reach the pod's IP", e["FLOE_ADDR"])
	}
	if _, dev := e["FLOE_DEV"]; dev {
		t.Error("dev mode in the chart")
	}
	flags := serveFlags(t)
	for name := range e {
		if strings.HasPrefix(name, "FLOE_") && !flags[name] {
			t.Errorf("%s is no flag of floe serve", name)
		}
	}
	if get(spec, "securityContext", "runAsNonRoot") != true || num(spec, "securityContext", "runAsUser") != imageUID ||
		num(spec, "securityContext", "fsGroup") != imageUID {
		t.Errorf("pod securityContext %v: want runAsNonRoot as the image's user %d, fsGroup so it owns its volumes", get(spec, "securityContext"), imageUID)
	}
	if get(c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Error("the root file system is writable")
	}

	// Every volume mount has its volume, and each file setting points
	// into a mount.
	volumes := list(spec, "volumes")
	mounts := list(c, "volumeMounts")
	for _, m := range mounts {
		if named(volumes, str(m, "name")) == nil && !isClaimTemplate(ms, str(m, "name")) {
			t.Errorf("mount %s has no volume", str(m, "name"))
		}
	}
	if mountAt(mounts, "/tmp") == nil {
		t.Error("no writable /tmp (garbage collection's marks) on a read-only root")
	}
	for _, name := range []string{"FLOE_AUTH_TOKEN_FILE", "FLOE_AUTH_JWKS_FILE", "FLOE_AUTH_OAUTH_CLIENTS_FILE", "FLOE_AUTH_OAUTH_SIGNING_KEY_FILE"} {
		p, ok := e[name]
		if !ok {
			continue
		}
		dir, key := filepath.Split(p)
		m := mountAt(mounts, strings.TrimSuffix(dir, "/"))
		if m == nil || get(m, "readOnly") != true {
			t.Errorf("%s=%s is not in a read-only mount", name, p)
			continue
		}
		if secret := str(named(volumes, str(m, "name")), "secret", "secretName"); secret == "" {
			t.Errorf("%s is mounted from %v, want a Secret", name, named(volumes, str(m, "name")))
		} else if made := ms["Secret"][secret]; made != nil && get(made, "stringData", key) == nil {
			t.Errorf("%s: the chart's Secret %s has no key %s", name, secret, key)
		}
	}
	return c
}

func isClaimTemplate(ms manifests, name string) bool {
	for _, s := range ms["StatefulSet"] {
		for _, ct := range list(s, "spec", "volumeClaimTemplates") {
			if str(ct, "metadata", "name") == name {
				return true
			}
		}
	}
	return false
}

func mountAt(mounts []any, path string) any {
	for _, m := range mounts {
		if str(m, "mountPath") == path {
			return m
		}
	}
	return nil
}

// checkSelectors: the Service, and the ServiceMonitor through the
// Service, select the workload's pods.
func checkSelectors(t *testing.T, ms manifests, podLabels map[string]any) {
	t.Helper()
	svc := ms["Service"]["t-floe"]
	if svc == nil {
		t.Fatal("no Service t-floe")
	}
	for k, v := range get(svc, "spec", "selector").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("Service selects %s=%v, pods have %v", k, v, podLabels[k])
		}
	}
	if str(svc, "spec", "ports", "0", "targetPort") != "http" {
		t.Errorf("Service targets %v", get(svc, "spec", "ports"))
	}
	sm := ms["ServiceMonitor"]["t-floe"]
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	if str(sm, "spec", "endpoints", "0", "path") != "/metrics" || str(sm, "spec", "endpoints", "0", "port") != "http" {
		t.Errorf("ServiceMonitor endpoints %v", get(sm, "spec", "endpoints"))
	}
	selected := 0
	for _, s := range ms["Service"] {
		labels := get(s, "metadata", "labels").(map[string]any)
		match := true
		for k, v := range get(sm, "spec", "selector", "matchLabels").(map[string]any) {
			match = match && labels[k] == v
		}
		if match {
			selected++
		}
	}
	if selected != 1 {
		t.Errorf("the ServiceMonitor selects %d Services, want 1 (each pod scraped once)", selected)
	}
}

func TestEmbedded(t *testing.T) {
	ms := render(t, "-f", valuesFile("embedded"))
	if len(ms["Deployment"]) > 0 || len(ms["PodDisruptionBudget"]) > 0 {
		t.Errorf("embedded mode renders a Deployment or a PodDisruptionBudget: %v %v", ms["Deployment"], ms["PodDisruptionBudget"])
	}
	sts := ms["StatefulSet"]["t-floe"]
	if sts == nil {
		t.Fatalf("no StatefulSet t-floe: %v", ms)
	}
	if num(sts, "spec", "replicas") != 1 {
		t.Errorf("replicas %v: Pebble has one writer", get(sts, "spec", "replicas"))
	}
	if ms["Service"][str(sts, "spec", "serviceName")] == nil || str(ms["Service"][str(sts, "spec", "serviceName")], "spec", "clusterIP") != "None" {
		t.Errorf("serviceName %s is not a headless Service of the chart", str(sts, "spec", "serviceName"))
	}
	pod := get(sts, "spec", "template")
	c := checkPod(t, ms, pod)
	e := env(c)
	if e["FLOE_DATA_DIR"] != "/data" || mountAt(list(c, "volumeMounts"), "/data") == nil || !isClaimTemplate(ms, "data") {
		t.Errorf("the store is not on the data claim: FLOE_DATA_DIR=%q", e["FLOE_DATA_DIR"])
	}
	if mountAt(list(c, "volumeMounts"), e["FLOE_WAREHOUSE"]) == nil || !isClaimTemplate(ms, "warehouse") {
		t.Errorf("the warehouse %s is not on a claim", e["FLOE_WAREHOUSE"])
	}
	if _, ok := e["FLOE_STORE"]; ok {
		t.Error("embedded mode sets FLOE_STORE")
	}
	checkSelectors(t, ms, get(pod, "metadata", "labels").(map[string]any))

	// The bundle files reach the container at their bundle paths.
	var values struct {
		Policy struct {
			Files map[string]string `yaml:"files"`
		} `yaml:"policy"`
	}
	b, err := os.ReadFile(valuesFile("embedded"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil || len(values.Policy.Files) == 0 {
		t.Fatalf("ci values have no policy files: %v", err)
	}
	if e["FLOE_POLICY_BUNDLE"] != "/etc/floe/policy" {
		t.Errorf("FLOE_POLICY_BUNDLE=%q", e["FLOE_POLICY_BUNDLE"])
	}
	cm := ms["ConfigMap"]["t-floe-policy"]
	for path, content := range values.Policy.Files {
		m := mountAt(list(c, "volumeMounts"), "/etc/floe/policy/"+path)
		if m == nil || str(m, "name") != "policy" {
			t.Errorf("bundle file %s is not mounted", path)
			continue
		}
		if got := str(cm, "data", str(m, "subPath")); got != content {
			t.Errorf("bundle file %s mounts key %s holding %q, want %q", path, str(m, "subPath"), got, content)
		}
	}
	if str(pod, "metadata", "annotations", "checksum/policy") == "" {
		t.Error("no checksum/policy annotation: a bundle change would not reach the pods")
	}
}

func TestScaleout(t *testing.T) {
	ms := render(t, "-f", valuesFile("scaleout"))
	if len(ms["StatefulSet"]) > 0 {
		t.Error("scaleout mode renders a StatefulSet")
	}
	d := ms["Deployment"]["t-floe"]
	if d == nil {
		t.Fatal("no Deployment t-floe")
	}
	if num(d, "spec", "replicas") != 3 {
		t.Errorf("replicas %v, want 3", get(d, "spec", "replicas"))
	}
	if num(d, "spec", "strategy", "rollingUpdate", "maxUnavailable") != 0 {
		t.Errorf("a rollout may take a replica down before its successor is ready: %v", get(d, "spec", "strategy"))
	}
	pod := get(d, "spec", "template")
	c := checkPod(t, ms, pod)
	e := env(c)
	if e["FLOE_STORE"] != "secret:floe-store/dsn" {
		t.Errorf("FLOE_STORE = %q, want the DSN from Secret floe-store key dsn", e["FLOE_STORE"])
	}
	if _, ok := e["FLOE_DATA_DIR"]; ok || mountAt(list(c, "volumeMounts"), "/data") != nil {
		t.Error("scaleout replicas keep a local store")
	}
	if e["FLOE_S3_ACCESS_KEY_ID"] != "secret:floe-s3/FLOE_S3_ACCESS_KEY_ID" || e["FLOE_S3_SECRET_ACCESS_KEY"] != "secret:floe-s3/FLOE_S3_SECRET_ACCESS_KEY" {
		t.Errorf("S3 keys not from their Secret: %q %q", e["FLOE_S3_ACCESS_KEY_ID"], e["FLOE_S3_SECRET_ACCESS_KEY"])
	}
	for _, name := range []string{"FLOE_AUTH_TOKEN_FILE", "FLOE_AUTH_JWKS_FILE", "FLOE_AUTH_OAUTH_CLIENTS_FILE", "FLOE_AUTH_OAUTH_SIGNING_KEY_FILE", "FLOE_AUTH_JWT_ISSUER", "FLOE_AUTH_JWT_AUDIENCE", "FLOE_POLICY_BUNDLE_URL"} {
		if e[name] == "" {
			t.Errorf("%s not set", name)
		}
	}
	// The change feed's settings: the Iceberg events endpoint, the
	// subscriptions mounted where --event-webhooks reads them, the
	// secrets they name as variables.
	if e["FLOE_ICEBERG_EVENTS"] != "true" || e["FLOE_EVENT_WEBHOOKS"] != "/etc/floe/events/webhooks.json" {
		t.Errorf("FLOE_ICEBERG_EVENTS %q, FLOE_EVENT_WEBHOOKS %q", e["FLOE_ICEBERG_EVENTS"], e["FLOE_EVENT_WEBHOOKS"])
	}
	if m := mountAt(list(c, "volumeMounts"), "/etc/floe/events"); m == nil || get(m, "readOnly") != true ||
		str(named(list(pod, "spec", "volumes"), str(m, "name")), "configMap", "name") != "t-floe-events" {
		t.Errorf("the webhooks file is not mounted read-only from ConfigMap t-floe-events: %v", m)
	}
	if hooks := str(ms["ConfigMap"]["t-floe-events"], "data", "webhooks.json"); !strings.Contains(hooks, `"secretEnv": "FLOE_DASHBOARDS_HOOK_SECRET"`) {
		t.Errorf("ConfigMap t-floe-events holds %q, want the values' subscriptions", hooks)
	}
	if from := list(c, "envFrom"); len(from) != 1 || str(from[0], "secretRef", "name") != "floe-webhook-secrets" {
		t.Errorf("envFrom %v, want the webhook secrets' Secret", from)
	}
	if str(pod, "metadata", "annotations", "checksum/events") == "" {
		t.Error("no checksum/events annotation: a subscriptions change would not reach the pods")
	}
	if str(named(list(pod, "spec", "volumes"), "auth"), "secret", "secretName") != "floe-auth" {
		t.Errorf("auth files not from the existing Secret floe-auth: %v", named(list(pod, "spec", "volumes"), "auth"))
	}
	if num(pod, "spec", "terminationGracePeriodSeconds") != 65 {
		t.Errorf("terminationGracePeriodSeconds %v, want 10+50+5", get(pod, "spec", "terminationGracePeriodSeconds"))
	}
	podLabels := get(pod, "metadata", "labels").(map[string]any)
	checkSelectors(t, ms, podLabels)
	pdb := ms["PodDisruptionBudget"]["t-floe"]
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget")
	}
	if num(pdb, "spec", "maxUnavailable") != 1 {
		t.Errorf("PDB %v", get(pdb, "spec"))
	}
	for k, v := range get(pdb, "spec", "selector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("PDB selects %s=%v, pods have %v", k, v, podLabels[k])
		}
	}

	// Values flow through: replicas, and a DSN given inline becomes the
	// chart's Secret.
	ms = render(t, "-f", valuesFile("scaleout"), "--set", "replicas=5", "--set", "store.existingSecret=", "--set", "store.dsn=postgres://u:p@db/floe")
	if n := num(ms["Deployment"]["t-floe"], "spec", "replicas"); n != 5 {
		t.Errorf("--set replicas=5 renders %d", n)
	}
	c = named(list(ms["Deployment"]["t-floe"], "spec", "template", "spec", "containers"), "floe")
	if got := env(c)["FLOE_STORE"]; got != "secret:t-floe-store/dsn" || str(ms["Secret"]["t-floe-store"], "stringData", "dsn") != "postgres://u:p@db/floe" {
		t.Errorf("inline DSN: FLOE_STORE %q, Secret %v", got, ms["Secret"]["t-floe-store"])
	}
}

// TestRefused: settings that cannot work fail at render time, saying why.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", valuesFile("embedded"), "--set", "auth.tokenFileKey=", "--set", "auth.files=null"}, "needs authentication"},
		{[]string{"-f", valuesFile("scaleout"), "--set", "store.existingSecret="}, "PostgreSQL DSN"},
		{[]string{"-f", valuesFile("scaleout"), "--set", "auth.oauthSigningKeyFileKey="}, "oauthSigningKeyFileKey"},
		{[]string{"-f", valuesFile("scaleout"), "--set", "warehouse.location=/warehouse"}, "ReadWriteMany"},
		{[]string{"-f", valuesFile("embedded"), "--set", "mode=cluster"}, "mode must be"},
		{[]string{"-f", valuesFile("embedded"), "--set", "policy.bundleUrl=http://b/x.tar.gz"}, "set one"},
	} {
		_, err := helm(t, append([]string{"template", "t", chart}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
	// And the default values alone are refused for want of authentication,
	// not rendered into a server that cannot start.
	if _, err := helm(t, "template", "t", chart); err == nil || !slices.ContainsFunc([]string{"needs authentication"}, func(s string) bool { return strings.Contains(err.Error(), s) }) {
		t.Errorf("default values: %v", err)
	}
}
