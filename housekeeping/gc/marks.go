package gc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// marks is a run's mark set: a temporary Pebble database, so that a
// warehouse of millions of files is marked without holding its paths in
// memory. It is deleted when the run ends; nothing in it must survive a
// crash (a new run marks again from scratch), so it writes without a WAL
// and never syncs.
//
// Keys: 'f' + canonical location → the file's provenance (why it is live);
// 'r' + canonical location → a metadata file, manifest list or manifest
// already read (or being read) in this run; 'c' + commit hash → how much
// of that commit is marked (commitTree, commitAncestry); 'd' + canonical
// location → a file this run deleted.
type marks struct {
	dir string
	db  *pebble.DB
	// claimMu makes claim's read-then-write atomic.
	claimMu sync.Mutex

	// deletedAny is set once the run has deleted a file: from then on,
	// marking a file also asks whether this run deleted it (a commit that
	// landed during the sweep made it live again: see revivals).
	deletedAny atomic.Bool
	revivedMu  sync.Mutex
	revived    []revival
	revivedN   int64
}

// revival is a file this run deleted that a later re-mark found live.
type revival struct {
	loc string
	why provenance
}

const (
	prefixFile   = 'f'
	prefixRead   = 'r'
	prefixCommit = 'c'
	prefixGone   = 'd'
)

// Commit states: commitTree says every file of the commit's tree is
// marked; commitAncestry says so of every ancestor's too (all parents).
const (
	commitTree     byte = 1
	commitAncestry byte = 2
)

func openMarks(tempDir string) (*marks, error) {
	removeStaleMarks(tempDir)
	dir, err := os.MkdirTemp(tempDir, "floe-gc-marks-")
	if err != nil {
		return nil, fmt.Errorf("create the mark database's directory: %w", err)
	}
	// Absolute, so the sweep can tell it apart from warehouse files when
	// it lies inside a warehouse.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	db, err := pebble.Open(dir, &pebble.Options{
		DisableWAL:   true,
		Cache:        nil, // Pebble's default 8 MiB
		MemTableSize: 16 << 20,
		Logger:       quietLogger{},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open the mark database in %s: %w", dir, err)
	}
	return &marks{dir: dir, db: db}, nil
}

func (m *marks) close() error {
	err := m.db.Close()
	return errors.Join(err, os.RemoveAll(m.dir))
}

func key(prefix byte, s string) []byte {
	k := make([]byte, 1+len(s))
	k[0] = prefix
	copy(k[1:], s)
	return k
}

// get returns the value under k, or ok false.
func (m *marks) get(k []byte) (val []byte, ok bool, err error) {
	v, closer, err := m.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	val = append([]byte(nil), v...)
	return val, true, closer.Close()
}

// claim sets k to v unless it is set already, and says whether it did:
// the first caller to claim a file to read reads it, the others skip it.
func (m *marks) claim(k, v []byte) (bool, error) {
	m.claimMu.Lock()
	defer m.claimMu.Unlock()
	_, ok, err := m.get(k)
	if err != nil || ok {
		return false, err
	}
	return true, m.db.Set(k, v, pebble.NoSync)
}

// markFile marks one file live, keeping the first provenance recorded.
func (m *marks) markFile(loc string, why provenance) (bool, error) {
	first, err := m.claim(key(prefixFile, canonical(loc)), why.encode())
	if err != nil || !first {
		return first, err
	}
	return true, m.checkRevived(loc, why.encode())
}

// deleted records that the run deleted a file.
func (m *marks) deleted(canon string) error {
	m.deletedAny.Store(true)
	return m.db.Set(key(prefixGone, canon), nil, pebble.NoSync)
}

// checkRevived records a file being marked that this run deleted before.
func (m *marks) checkRevived(loc string, why []byte) error {
	if !m.deletedAny.Load() {
		return nil
	}
	m.revivedMu.Lock()
	defer m.revivedMu.Unlock()
	k := key(prefixGone, canonical(loc))
	_, gone, err := m.get(k)
	if err != nil || !gone {
		return err
	}
	// Counted once, however many manifests name it.
	if err := m.db.Delete(k, pebble.NoSync); err != nil {
		return err
	}
	m.revivedN++
	if len(m.revived) < maxWarnings {
		m.revived = append(m.revived, revival{loc: loc, why: decodeProvenance(why)})
	}
	return nil
}

// revivals returns how many files this run deleted were marked live
// afterwards, and the first of them.
func (m *marks) revivals() (int64, []revival) {
	m.revivedMu.Lock()
	defer m.revivedMu.Unlock()
	return m.revivedN, slices.Clone(m.revived)
}

// batch marks many files at once (a manifest's entries); a file marked
// twice keeps the later provenance, which is as true as the first.
type markBatch struct {
	m *marks
	b *pebble.Batch
	n int
}

func (m *marks) newBatch() *markBatch { return &markBatch{m: m, b: m.db.NewBatch()} }

func (b *markBatch) add(loc string, why []byte) error {
	b.n++
	if err := b.b.Set(key(prefixFile, canonical(loc)), why, nil); err != nil {
		return err
	}
	if err := b.m.checkRevived(loc, why); err != nil {
		return err
	}
	if b.b.Len() > 4<<20 {
		return b.flush()
	}
	return nil
}

func (b *markBatch) flush() error {
	if b.b == nil || b.b.Empty() {
		return nil
	}
	if err := b.b.Commit(pebble.NoSync); err != nil {
		return err
	}
	b.b.Reset()
	return nil
}

// close commits what is left; it may be called again.
func (b *markBatch) close() error {
	if b.b == nil {
		return nil
	}
	err := b.flush()
	err = errors.Join(err, b.b.Close())
	b.b = nil
	return err
}

// isMarked returns the provenance of a marked file.
func (m *marks) isMarked(canon string) (provenance, bool, error) {
	v, ok, err := m.get(key(prefixFile, canon))
	if err != nil || !ok {
		return provenance{}, false, err
	}
	return decodeProvenance(v), true, nil
}

func (m *marks) commitState(h string) (byte, error) {
	v, ok, err := m.get(key(prefixCommit, h))
	if err != nil || !ok || len(v) == 0 {
		return 0, err
	}
	return v[0], nil
}

func (m *marks) setCommitState(h string, s byte) error {
	return m.db.Set(key(prefixCommit, h), []byte{s}, pebble.NoSync)
}

// provenance says why a file is live: which reference, commit and table
// (or view) reached it first, and as what.
type provenance struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Table  string `json:"table"`
	// Kind is metadata, previous-metadata, manifest-list, manifest,
	// data, position-deletes, equality-deletes, statistics,
	// partition-statistics or view-metadata.
	Kind string `json:"kind"`
}

func (p provenance) encode() []byte {
	return []byte(p.Ref + "\x00" + p.Commit + "\x00" + p.Table + "\x00" + p.Kind)
}

func decodeProvenance(b []byte) provenance {
	parts := strings.SplitN(string(b), "\x00", 4)
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	return provenance{Ref: parts[0], Commit: parts[1], Table: parts[2], Kind: parts[3]}
}

func (p provenance) String() string {
	return fmt.Sprintf("%s of %s on %s at commit %s", p.Kind, p.Table, p.Ref, p.Commit)
}

// staleMarksAge is how old a mark database's directory must be before
// removeStaleMarks considers it: a run opens its database right after
// making the directory, so a younger one may be about to be locked.
const staleMarksAge = 10 * time.Minute

// removeStaleMarks removes the mark databases of runs that ended without
// closing them (a killed server): directories under tempDir named like
// openMarks's whose Pebble lock no process holds (vfs.Default.Lock sees
// other processes' locks and this one's). Best effort: a directory that
// cannot be checked or removed stays.
func removeStaleMarks(tempDir string) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(tempDir, "floe-gc-marks-*"))
	if err != nil {
		return
	}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() || time.Since(st.ModTime()) < staleMarksAge {
			continue
		}
		lock, err := vfs.Default.Lock(filepath.Join(dir, "LOCK"))
		if err != nil {
			continue // in use
		}
		_ = lock.Close()
		_ = os.RemoveAll(dir)
	}
}

// quietLogger keeps Pebble's informational logs out of the server's.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...)) // as pebble.DefaultLogger does: Pebble's invariants
}
