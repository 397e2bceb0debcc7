package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const (
	dockerfilePath = "../Dockerfile"
	repoRoot       = "../.."
	testVersion    = "v0.0.0-imagetest"
)

func finalSpec(t *testing.T) (*dockerfile, *imageSpec) {
	t.Helper()
	df, err := parseDockerfileFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := df.finalSpec(map[string]string{"VERSION": testVersion})
	if err != nil {
		t.Fatal(err)
	}
	return df, spec
}

func keys(m map[string]struct{}) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// TestDockerfileMatchesImage: deploy/Dockerfile and this program declare
// the same image: the runtime configuration, the files of the final
// stage and who owns them, and the build of the binary.
func TestDockerfileMatchesImage(t *testing.T) {
	df, spec := finalSpec(t)
	want := imageConfig(testVersion)

	if spec.Base != "scratch" {
		t.Errorf("final stage FROM %s, want scratch: the image is the binary on an empty base", spec.Base)
	}
	if len(spec.Runs) > 0 {
		t.Errorf("final stage RUNs %q: there is no shell to run them", spec.Runs)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"USER", spec.User, want.User},
		{"ENTRYPOINT", spec.Entrypoint, want.Entrypoint},
		{"CMD", spec.Cmd, want.Cmd},
		{"ENV", spec.Env, want.Env},
		{"EXPOSE", sorted(spec.ExposedPorts), keys(want.ExposedPorts)},
		{"VOLUME", sorted(spec.Volumes), keys(want.Volumes)},
		{"LABEL", spec.Labels, want.Labels},
		{"WORKDIR", spec.WorkingDir, want.WorkingDir},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: Dockerfile %q, image %q", c.what, c.got, c.want)
		}
	}
	if hc := spec.Healthcheck; hc == nil {
		t.Error("the Dockerfile declares no HEALTHCHECK")
	} else if wh := want.Healthcheck; !reflect.DeepEqual(hc.Test, wh.Test) || hc.Interval != wh.Interval ||
		hc.Timeout != wh.Timeout || hc.StartPeriod != wh.StartPeriod || hc.Retries != wh.Retries {
		t.Errorf("HEALTHCHECK: Dockerfile %+v, image %+v", hc, wh)
	}
	if u, _, _ := strings.Cut(spec.User, ":"); u == "0" || u == "root" || u == "" {
		t.Errorf("USER %q runs as root", spec.User)
	}
	if spec.Labels["org.opencontainers.image.version"] != testVersion {
		t.Errorf("the version label does not come from the VERSION build argument: %v", spec.Labels)
	}

	// The final stage's COPYs place exactly the image's files and leaf
	// directories, with the same owners.
	owners := map[string]string{}
	for _, c := range spec.Copies {
		if c.From != "build" {
			t.Errorf("COPY %v from %q: everything comes from the build stage", c.Srcs, c.From)
		}
		for _, d := range c.Dests {
			owner := c.Chown
			if owner == "" {
				owner = "0:0"
			}
			owners[d] = owner
		}
		if slices.Contains(c.Dests, binaryPath) && !reflect.DeepEqual(c.Srcs, []string{"/out" + binaryPath}) {
			t.Errorf("the binary is copied from %v, but the build stage writes /out%s", c.Srcs, binaryPath)
		}
	}
	es := entries([]byte("binary"), []byte("certs"))
	placed := map[string]string{}
	for _, e := range es {
		leaf := true
		for _, o := range es {
			if strings.HasPrefix(o.Path, e.Path+"/") {
				leaf = false
			}
		}
		if leaf {
			placed[e.Path] = strconv.Itoa(e.UID) + ":" + strconv.Itoa(e.GID)
		}
	}
	if !reflect.DeepEqual(owners, placed) {
		t.Errorf("the Dockerfile copies (path: owner)\n%v\nthe image holds\n%v", owners, placed)
	}

	// The build stage builds the binary as buildBinary does and writes
	// the passwd and group entries the image holds.
	var build *stage
	for i := range df.Stages {
		if df.Stages[i].Name == "build" {
			build = &df.Stages[i]
		}
	}
	if build == nil {
		t.Fatal("no stage named build")
	}
	var goBuild []string
	var runs strings.Builder
	for _, in := range build.Instructions {
		if in.Cmd != "RUN" {
			continue
		}
		runs.WriteString(in.Args + "\n")
		ws, err := words(in.Args)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ws, "build") {
			for i := range ws {
				if ws[i], err = expand(ws[i], map[string]string{"VERSION": testVersion}); err != nil {
					t.Fatalf("line %d: %v", in.Line, err)
				}
			}
			goBuild = ws
		}
	}
	if wantBuild := append([]string{"CGO_ENABLED=0", "go"}, buildArgs(testVersion, "/out"+binaryPath)...); !reflect.DeepEqual(goBuild, wantBuild) {
		t.Errorf("the build stage runs\n%q\nbuildBinary runs\n%q", goBuild, wantBuild)
	}
	for _, line := range []string{passwd, group} {
		if !strings.Contains(runs.String(), "'"+strings.TrimSuffix(line, "\n")+"'") {
			t.Errorf("the build stage does not write %q", line)
		}
	}
}

// layerFile is one entry of the image's layer.
type layerFile struct {
	hdr  *tar.Header
	data []byte
}

func readLayer(t *testing.T, img v1.Image) map[string]layerFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 on an empty base", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]layerFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = layerFile{h, b}
	}
	return out
}

// TestImageLayout builds the binary as the Dockerfile does, assembles the
// image, writes it as an OCI layout, reads the layout back and checks
// what a container runtime would see; then runs the binary from the
// layer with the image's entrypoint, command and environment, and the
// image's healthcheck against it.
func TestImageLayout(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool builds the binary the image holds: %v", err)
	}
	dir := t.TempDir()
	binPath := filepath.Join(dir, "floe")
	if err := buildBinary(t.Context(), goTool, repoRoot, testVersion, binPath); err != nil {
		t.Fatal(err)
	}
	binary, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	img, err := buildImage(binary, []byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"), testVersion, hostArch())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "oci")
	if err := writeLayout(out, img, testVersion); err != nil {
		t.Fatal(err)
	}

	// Read it back as a runtime would: index, manifest, config, layer.
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("index manifests %+v, want one tagged %s", im.Manifests, testVersion)
	}
	got, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Fatalf("the layout's image does not validate: %v", err)
	}
	if mt, _ := got.MediaType(); !strings.Contains(string(mt), "oci") {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != hostArch() {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if want := imageConfig(testVersion); !reflect.DeepEqual(cf.Config, want) {
		t.Errorf("config\n%+v\nwant\n%+v", cf.Config, want)
	}

	files := readLayer(t, got)
	bin, ok := files[binaryPath]
	if !ok {
		t.Fatalf("no %s in the layer", binaryPath)
	}
	if bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode&0o111 == 0 || bin.hdr.Uid != 0 || !bytes.Equal(bin.data, binary) {
		t.Errorf("%s: type %c mode %o uid %d, %d bytes (built %d)", binaryPath, bin.hdr.Typeflag, bin.hdr.Mode, bin.hdr.Uid, len(bin.data), len(binary))
	}
	ef, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("%s is not an ELF binary: %v", binaryPath, err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is not static, and the empty base has no libc", binaryPath)
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s links %v", binaryPath, libs)
	}
	// No shell, and nothing else executable: the binary is the only
	// program in the image.
	for p, f := range files {
		if base := path.Base(p); base == "sh" || base == "bash" || base == "busybox" || strings.HasPrefix(p, "/bin") {
			t.Errorf("the image holds %s", p)
		}
		if f.hdr.Typeflag == tar.TypeReg && f.hdr.Mode&0o111 != 0 && p != binaryPath {
			t.Errorf("the image holds another executable, %s", p)
		}
		if f.hdr.Typeflag == tar.TypeSymlink || f.hdr.Typeflag == tar.TypeLink {
			t.Errorf("the image holds a link, %s", p)
		}
	}
	// The user is not root and has an entry in /etc/passwd; it owns the
	// volumes' mount points.
	user, _, _ := strings.Cut(cf.Config.User, ":")
	uidN, err := strconv.Atoi(user)
	if err != nil || uidN == 0 {
		t.Errorf("config user %q: want a numeric non-root uid (Kubernetes' runAsNonRoot checks numbers)", cf.Config.User)
	}
	if !regexpLine(string(files["/etc/passwd"].data), ":"+user+":") {
		t.Errorf("/etc/passwd has no entry for uid %s: %q", user, files["/etc/passwd"].data)
	}
	for v := range cf.Config.Volumes {
		f, ok := files[v]
		if !ok || f.hdr.Typeflag != tar.TypeDir || strconv.Itoa(f.hdr.Uid) != user {
			t.Errorf("volume %s: in layer %v, owner %v; want a directory the user owns", v, ok, f.hdr)
		}
	}
	if f := files["/tmp"]; f.hdr == nil || f.hdr.Mode != 0o1777 {
		t.Errorf("/tmp missing or not world-writable with the sticky bit: %+v", f.hdr)
	}
	if _, ok := files[caCerts]; !ok {
		t.Errorf("no CA bundle at %s", caCerts)
	}

	runFromLayer(t, dir, bin.data, cf.Config)
}

func regexpLine(text, part string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// runFromLayer starts the binary found in the layer as the container
// would (entrypoint + command, the image's environment with the address,
// store and warehouse moved to this test's loopback port and temp dirs,
// dev mode for anonymous access), waits for it to listen, then runs the
// image's healthcheck with the same environment.
func runFromLayer(t *testing.T, dir string, binary []byte, cfg v1.Config) {
	t.Helper()
	exe := filepath.Join(dir, "extracted", "floe")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ver, err := exec.Command(exe, "version").Output()
	if err != nil || !strings.Contains(string(ver), "floe "+testVersion+" ") {
		t.Errorf("floe version from the layer: %q, %v; want the label's version %s", ver, err, testVersion)
	}

	// A free loopback port: the healthcheck finds the server through
	// FLOE_ADDR, so the server cannot pick its own with port 0.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := append(os.Environ(), cfg.Env...)
	env = append(env, "FLOE_ADDR="+addr, "FLOE_DATA_DIR="+filepath.Join(dir, "data"), "FLOE_WAREHOUSE="+filepath.Join(dir, "warehouse"),
		"FLOE_DEV=true", "FLOE_LOG_FORMAT=json")

	argv := append(slices.Clone(cfg.Entrypoint[1:]), cfg.Cmd...)
	srv := exec.Command(exe, argv...)
	srv.Env = env
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan []string, 1)
	listening := make(chan struct{}, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var l struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				listening <- struct{}{}
			}
		}
		exited <- lines
	}()
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	select {
	case <-listening:
	case lines := <-exited:
		t.Fatalf("%s %v exited before listening:\n%s", cfg.Entrypoint[0], argv, strings.Join(lines, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not log a listening address within 30s")
	}

	test := cfg.Healthcheck.Test
	if test[0] != "CMD" || test[1] != binaryPath {
		t.Fatalf("healthcheck %q does not run the binary", test)
	}
	hc := exec.Command(exe, test[2:]...)
	hc.Env = env
	if b, err := hc.CombinedOutput(); err != nil {
		t.Errorf("the image's healthcheck %q failed against the running server: %v\n%s", test, err, b)
	}
	ready := exec.Command(exe, append(slices.Clone(test[2:]), "--ready")...)
	ready.Env = env
	if b, err := ready.CombinedOutput(); err != nil {
		t.Errorf("healthcheck --ready failed: %v\n%s", err, b)
	}
}
