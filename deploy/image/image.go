package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is. deploy/Dockerfile declares the same; the test
// compares the two.
const (
	binaryPath = "/usr/local/bin/floe"
	// uid and gid of the non-root user, distroless's "nonroot".
	uid, gid = 65532, 65532
	passwd   = "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group    = "nonroot:x:65532:\n"
	caCerts  = "/etc/ssl/certs/ca-certificates.crt"
	port     = "8181/tcp"
)

// buildArgs are the `go build` arguments of the binary, after
// CGO_ENABLED=0 go build: static, no file system paths or symbols, the
// version stamped in as `floe version` prints it.
func buildArgs(version, out string) []string {
	return []string{"build", "-trimpath", "-ldflags", "-s -w -X main.version=" + version, "-o", out, "./cmd/floe"}
}

// buildBinary runs the build deploy/Dockerfile runs, in the module at
// repoRoot.
func buildBinary(ctx context.Context, goTool, repoRoot, version, out string) error {
	cmd := exec.CommandContext(ctx, goTool, buildArgs(version, out)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, b)
	}
	return nil
}

// imageConfig is the runtime configuration of the image.
func imageConfig(version string) v1.Config {
	return v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, gid),
		Entrypoint:   []string{binaryPath},
		Cmd:          []string{"serve"},
		Env:          []string{"FLOE_ADDR=0.0.0.0:8181", "FLOE_DATA_DIR=/data", "FLOE_WAREHOUSE=/warehouse"},
		ExposedPorts: map[string]struct{}{port: {}},
		Volumes:      map[string]struct{}{"/data": {}, "/warehouse": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "floe",
			"org.opencontainers.image.description": "A git-like catalog for Apache Iceberg",
			"org.opencontainers.image.source":      "https://github.com/floe-catalog/floe",
			"org.opencontainers.image.version":     version,
		},
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", binaryPath, "healthcheck"},
			Interval:    10 * time.Second,
			Timeout:     3 * time.Second,
			StartPeriod: 10 * time.Second,
			Retries:     3,
		},
	}
}

// entry is one file or directory of the image's layer.
type entry struct {
	Path     string // absolute
	Dir      bool
	Mode     int64
	UID, GID int
	Data     []byte
}

// entries are the files the image holds: what the Dockerfile's final
// stage copies, and the directories above them. binary and certs are the
// floe binary and a CA bundle (floe talks TLS to S3 and JWKS servers).
func entries(binary, certs []byte) []entry {
	placed := []entry{
		{Path: caCerts, Mode: 0o644, Data: certs},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: binaryPath, Mode: 0o755, Data: binary},
		{Path: "/data", Dir: true, Mode: 0o755, UID: uid, GID: gid},
		{Path: "/warehouse", Dir: true, Mode: 0o755, UID: uid, GID: gid},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}
	// Parent directories, root-owned, before their children.
	seen := map[string]bool{}
	var out []entry
	for _, e := range placed {
		for dir := path.Dir(e.Path); dir != "/"; dir = path.Dir(dir) {
			if !seen[dir] {
				seen[dir] = true
				out = append(out, entry{Path: dir, Dir: true, Mode: 0o755})
			}
		}
	}
	out = append(out, placed...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// layerTar writes the entries as a tar, with a fixed time so the same
// inputs give the same layer digest.
func layerTar(es []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, e := range es {
		h := &tar.Header{Name: strings.TrimPrefix(e.Path, "/"), Mode: e.Mode, Uid: e.UID, Gid: e.GID, ModTime: epoch, Format: tar.FormatPAX}
		if e.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildImage assembles the image on an empty base: one layer, OCI media
// types, the configuration above, for linux on arch.
func buildImage(binary, certs []byte, version, arch string) (v1.Image, error) {
	tb, err := layerTar(entries(binary, certs))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tb)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		CreatedBy: "deploy/image: floe binary, passwd, CA certificates, volume mount points",
		Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
	}})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = imageConfig(version)
	return mutate.ConfigFile(img, cf)
}

// writeLayout writes img as an OCI image layout in dir (which must not
// hold one already), tagged with the version.
func writeLayout(dir string, img v1.Image, version string) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	return nil
}

// hostArch is the architecture the binary is built for: GOARCH, as go
// build sees it.
func hostArch() string {
	if a := os.Getenv("GOARCH"); a != "" {
		return a
	}
	return runtime.GOARCH
}
