package policies

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// compiledIn is the default bundle floe embeds (policy/defaultbundle.go).
const compiledIn = "../../policy/defaultbundle"

// bundleFiles maps every file of a bundle folder (its .manifest and the
// floe/ tree, not the README) to its contents.
func bundleFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if rel == "README.md" {
			return nil
		}
		b, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDefaultBundleIsCompiledIn: deploy/policies/default is the bundle
// floe runs without --policy-bundle, file for file, so an operator who
// starts from it starts from what they ran.
func TestDefaultBundleIsCompiledIn(t *testing.T) {
	want := bundleFiles(t, compiledIn)
	got := bundleFiles(t, "default")
	if len(want) < 3 {
		t.Fatalf("found %d files in %s, want the manifest, the policy, its tests and data", len(want), compiledIn)
	}
	const fix = "; copy it again: rm -r deploy/policies/default/floe && cp -r policy/defaultbundle/. deploy/policies/default/"
	for name, b := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("deploy/policies/default lacks %s%s", name, fix)
		case !bytes.Equal(g, b):
			t.Errorf("deploy/policies/default/%s differs from policy/defaultbundle/%s%s", name, name, fix)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("deploy/policies/default/%s is not in policy/defaultbundle%s", name, fix)
		}
	}
}
