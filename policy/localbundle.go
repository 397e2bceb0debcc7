package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// localSource is a bundle directory or .tar.gz file. Changes are found by
// hashing the content on every poll: robust against editors that replace
// files, atomic renames and file systems without notifications, and cheap
// for policy-sized bundles.
type localSource struct {
	path     string
	vc       *bundle.VerificationConfig
	lastHash string // content last tried, good or bad; under Engine.sourceMu
}

// snapshot is the source's content at one moment.
type snapshot struct {
	hash    string
	tarball []byte // nil for a directory
}

func (s *localSource) snapshot() (snapshot, error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return snapshot{}, fmt.Errorf("stat bundle %s: %w", s.path, err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(s.path)
		if err != nil {
			return snapshot{}, fmt.Errorf("read bundle %s: %w", s.path, err)
		}
		sum := sha256.Sum256(data)
		return snapshot{hash: hex.EncodeToString(sum[:]), tarball: data}, nil
	}
	h := sha256.New()
	err = filepath.WalkDir(s.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.path, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		n, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		// The length separates one file's content from the next name.
		fmt.Fprintf(h, "\x00%d\x00", n)
		return nil
	})
	if err != nil {
		return snapshot{}, fmt.Errorf("hash bundle directory %s: %w", s.path, err)
	}
	return snapshot{hash: hex.EncodeToString(h.Sum(nil))}, nil
}

// read parses the bundle of a snapshot, verifying its signature when a
// key is configured.
func (s *localSource) read(snap snapshot) (*bundle.Bundle, error) {
	var r *bundle.Reader
	if snap.tarball != nil {
		r = bundle.NewReader(bytes.NewReader(snap.tarball))
	} else {
		r = bundle.NewCustomReader(bundle.NewDirectoryLoader(s.path))
	}
	b, err := r.WithBundleVerificationConfig(s.vc).WithBundleName(bundleName).Read()
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", s.path, err)
	}
	return &b, nil
}

// reloadLocal activates the local bundle if its content changed since the
// last attempt, or always when force is set. A broken bundle is tried once
// per content change, so a bad edit is logged once, not every poll.
func (e *Engine) reloadLocal(ctx context.Context, force bool) error {
	e.sourceMu.Lock()
	defer e.sourceMu.Unlock()
	snap, err := e.local.snapshot()
	if err != nil {
		e.metrics.fetchErrors.Inc()
		e.log.Warn("policy bundle unreadable; keeping the active one", "path", e.local.path, "err", err)
		e.setLastError(err)
		return err
	}
	if !force && snap.hash == e.local.lastHash {
		return nil
	}
	e.local.lastHash = snap.hash
	b, err := e.local.read(snap)
	if err != nil {
		e.metrics.rejected.Inc()
		e.log.Error("policy bundle rejected; keeping the active one",
			"path", e.local.path, "active_revision", e.activeRevision(), "err", err)
		e.setLastError(err)
		return err
	}
	if err := e.activate(ctx, b, e.local.path); err != nil {
		e.setLastError(err)
		return err
	}
	return nil
}
