package storebackup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// Report aliases; the documents are defined in internal/apidoc.
type (
	BackupReport = apidoc.BackupReport
	ExportReport = apidoc.ExportReport
)

// ErrExists reports a backup directory or export file that already exists:
// nothing is ever overwritten.
var ErrExists = errors.New("already exists")

// ErrNotAbsolute reports a relative path given to the server, whose working
// directory means nothing to the caller.
var ErrNotAbsolute = errors.New("not an absolute path")

// Service backs up and exports one open Pebble store.
type Service struct {
	be      *pebblebackend.Backend
	dataDir string
	now     func() time.Time
}

// New returns the service over be, which is open on dataDir.
func New(be *pebblebackend.Backend, dataDir string) *Service {
	return &Service{be: be, dataDir: dataDir, now: time.Now}
}

// Backup writes a checkpoint of the store into dir, an absolute path that
// must not exist (its missing parents are created). Writes go on
// meanwhile; every commit acknowledged before Backup was called is in the
// backup (see pebblebackend.Backend.Checkpoint).
func (s *Service) Backup(ctx context.Context, dir string) (*BackupReport, error) {
	if err := checkNew(dir); err != nil {
		return nil, fmt.Errorf("backup into %s: %w", dir, err)
	}
	start := s.now()
	if err := s.be.Checkpoint(ctx, dir); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	files, bytes, err := dirSize(dir)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return &BackupReport{Dir: dir, Started: start.UTC(), Files: files, Bytes: bytes,
		DurationSeconds: s.now().Sub(start).Seconds()}, nil
}

// checkNew refuses a relative path or one that exists.
func checkNew(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: the path is on the server's machine", ErrNotAbsolute)
	}
	if _, err := os.Lstat(path); err == nil {
		return ErrExists
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// dirSize counts the regular files in dir and their bytes.
func dirSize(dir string) (int, int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return 0, 0, err
		}
		n++
		size += info.Size()
	}
	return n, size, nil
}
