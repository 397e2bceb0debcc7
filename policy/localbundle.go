package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader/filter"
)

// localSource is a bundle directory or .tar.gz file. Changes are found by
// hashing the content on every poll: robust against editors that replace
// files, atomic renames and file systems without notifications, and cheap
// for policy-sized bundles.
//
// A changed source is activated only once it is stable: the same content
// at two consecutive polls (PollInterval apart), or, for New and Reload,
// at two reads settleInterval apart. A bundle directory rewritten in place
// (cp -r, rsync, a config-map update) is then never read half-copied, and
// the bundle parsed is always the bytes that were hashed, read once into
// memory.
type localSource struct {
	path     string
	vc       *bundle.VerificationConfig
	settle   time.Duration
	lastHash string // content last tried, good or bad; under Engine.sourceMu
	// pending is content seen at the last poll and not yet tried: it is
	// tried if the next poll sees it again. Under Engine.sourceMu.
	pending string
}

// settleInterval is the gap between the two reads that must agree before
// New or Reload activate a local bundle; PollInterval, when shorter.
const settleInterval = 100 * time.Millisecond

// maxSettleWait bounds how long New or Reload wait for a bundle that keeps
// changing.
const maxSettleWait = 10 * time.Second

// snapshot is the source's content at one moment.
type snapshot struct {
	hash    string
	tarball []byte     // a .tar.gz source
	files   []fileCopy // a directory source, in walk order
}

// fileCopy is one regular file of a bundle directory, read into memory.
type fileCopy struct {
	rel  string // slash-separated, relative to the directory
	data []byte
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
	var files []fileCopy
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
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		files = append(files, fileCopy{rel: rel, data: data})
		// The length separates one file's content from the next name.
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return snapshot{}, fmt.Errorf("read bundle directory %s: %w", s.path, err)
	}
	return snapshot{hash: hex.EncodeToString(h.Sum(nil)), files: files}, nil
}

// settled reads the source until two reads settle apart agree, and returns
// the last.
func (s *localSource) settled(ctx context.Context) (snapshot, error) {
	prev, err := s.snapshot()
	if err != nil {
		return snapshot{}, err
	}
	deadline := time.Now().Add(maxSettleWait)
	t := time.NewTimer(s.settle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return snapshot{}, fmt.Errorf("wait for bundle %s to settle: %w", s.path, ctx.Err())
		case <-t.C:
		}
		cur, err := s.snapshot()
		if err != nil {
			return snapshot{}, err
		}
		if cur.hash == prev.hash {
			return cur, nil
		}
		if time.Now().After(deadline) {
			return snapshot{}, refuse(refusedUnstable, fmt.Errorf("bundle %s kept changing for %s; not activated", s.path, maxSettleWait))
		}
		prev = cur
		t.Reset(s.settle)
	}
}

// read parses the bundle of a snapshot, verifying its signature when a
// key is configured.
func (s *localSource) read(snap snapshot) (*bundle.Bundle, error) {
	var r *bundle.Reader
	if snap.tarball != nil {
		r = bundle.NewReader(bytes.NewReader(snap.tarball))
	} else {
		r = bundle.NewCustomReader(&memLoader{root: s.path, files: snap.files})
	}
	b, err := r.WithBundleVerificationConfig(s.vc).WithBundleName(bundleName).Read()
	if err != nil {
		return nil, refuse(refusedInvalid, fmt.Errorf("read bundle %s: %w", s.path, err))
	}
	return &b, nil
}

// memLoader hands OPA's bundle reader a directory snapshot's files, with
// the paths OPA's own directory loader gives (chrooted: "/floe/authz.rego").
type memLoader struct {
	root  string
	files []fileCopy
	next  int
}

func (l *memLoader) NextFile() (*bundle.Descriptor, error) {
	if l.next >= len(l.files) {
		return nil, io.EOF
	}
	f := l.files[l.next]
	l.next++
	p := "/" + f.rel
	return bundle.NewDescriptor(filepath.Join(l.root, filepath.FromSlash(p)), p, bytes.NewReader(f.data)), nil
}

// The reader configures nothing through these; the snapshot has already
// chosen the files (regular files only, as OPA's loader without symlinks).
func (l *memLoader) WithFilter(filter.LoaderFilter) bundle.DirectoryLoader   { return l }
func (l *memLoader) WithPathFormat(bundle.PathFormat) bundle.DirectoryLoader { return l }
func (l *memLoader) WithSizeLimitBytes(int64) bundle.DirectoryLoader         { return l }
func (l *memLoader) WithFollowSymlinks(bool) bundle.DirectoryLoader          { return l }

// reloadLocal activates the local bundle once its content changed since
// the last attempt and is stable, or at once (after settling) when force
// is set. A broken bundle is tried once per content change, so a bad edit
// is logged once, not every poll.
func (e *Engine) reloadLocal(ctx context.Context, force bool) error {
	e.sourceMu.Lock()
	defer e.sourceMu.Unlock()
	var snap snapshot
	var err error
	if force {
		snap, err = e.local.settled(ctx)
	} else {
		snap, err = e.local.snapshot()
	}
	if err != nil {
		if _, unstable := errors.AsType[*refusal](err); unstable {
			e.countRefusal(err)
			e.log.Error("policy bundle refused; keeping the active one", "path", e.local.path,
				"active_revision", e.activeRevision(), "reason", refusalReason(err), "err", err)
		} else if ctx.Err() == nil {
			e.metrics.fetchErrors.Inc()
			e.log.Warn("policy bundle unreadable; keeping the active one", "path", e.local.path, "err", err)
		}
		e.setLastError(err)
		return err
	}
	if !force {
		if snap.hash == e.local.lastHash {
			e.local.pending = ""
			return nil
		}
		if snap.hash != e.local.pending {
			e.local.pending = snap.hash
			e.log.Debug("policy bundle changed; activating it once unchanged at the next poll", "path", e.local.path)
			return nil
		}
	}
	e.local.pending = ""
	e.local.lastHash = snap.hash
	b, err := e.local.read(snap)
	if err != nil {
		e.countRefusal(err)
		e.log.Error("policy bundle refused; keeping the active one",
			"path", e.local.path, "active_revision", e.activeRevision(), "reason", refusalReason(err), "err", err)
		e.setLastError(err)
		return err
	}
	if err := e.activate(ctx, b, e.local.path); err != nil {
		e.setLastError(err)
		return err
	}
	e.setLastError(nil)
	return nil
}
