package storebackup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storeexport"
)

// exportTempPattern names the checkpoints online exports read, inside the
// data directory (so the checkpoint's hard links work: same filesystem).
// Pebble ignores files it does not recognise, so they never disturb the
// store; one left behind by a crash can be deleted.
const exportTempPattern = ".floe-export-*"

// Export writes a portable export of the running store to file, an
// absolute path that must not exist. It reads a checkpoint, not the live
// store, so the file is one consistent state however busy the store is,
// and holds every commit acknowledged before Export was called.
func (s *Service) Export(ctx context.Context, file string, opts storeexport.ExportOptions) (_ *ExportReport, err error) {
	if err := checkNew(file); err != nil {
		return nil, fmt.Errorf("export to %s: %w", file, err)
	}
	start := s.now()
	tmp, err := os.MkdirTemp(s.dataDir, exportTempPattern)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	snap := filepath.Join(tmp, "db")
	if err := s.be.Checkpoint(ctx, snap); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	be, err := pebblebackend.Open(snap, pebblebackend.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("export: open the checkpoint: %w", err)
	}
	defer func() { err = errors.Join(err, be.Close()) }()
	if opts.Source == "" {
		opts.Source = "pebble:" + s.dataDir
	}
	if opts.Now == nil {
		opts.Now = s.now
	}
	st, err := writeFile(ctx, be, file, opts)
	if err != nil {
		return nil, err
	}
	return report(file, start, s.now(), st), nil
}

// ExportDir writes a portable export of the store in dataDir, which no
// server may have open (Pebble's lock refuses it otherwise), to file.
func ExportDir(ctx context.Context, dataDir, file string, opts storeexport.ExportOptions) (_ *ExportReport, err error) {
	start := time.Now()
	if err := isBackup(dataDir); err != nil {
		return nil, fmt.Errorf("export %s: %w", dataDir, err)
	}
	be, err := pebblebackend.Open(dataDir, pebblebackend.Options{})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer func() { err = errors.Join(err, be.Close()) }()
	if opts.Source == "" {
		opts.Source = "pebble:" + dataDir
	}
	st, err := writeFile(ctx, be, file, opts)
	if err != nil {
		return nil, err
	}
	return report(file, start, time.Now(), st), nil
}

// ImportInto imports the export in file into be, an empty store of any
// backend (a PostgreSQL database, for a move off the embedded store). A
// failed import leaves only unreachable objects in be: run it again.
func ImportInto(ctx context.Context, file string, be backend.Backend) (*storeexport.Stats, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	return storeexport.Import(ctx, be, f, storeexport.ImportOptions{})
}

// ImportDir imports the export in file into a new Pebble store in dataDir,
// which must not exist or be empty. If the import fails, what it wrote is
// removed again.
func ImportDir(ctx context.Context, file, dataDir string) (_ *storeexport.Stats, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	created, err := emptyDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("import into %s: %w", dataDir, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, undo(dataDir, created))
		}
	}()
	be, err := pebblebackend.Open(dataDir, pebblebackend.Options{})
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	st, err := storeexport.Import(ctx, be, f, storeexport.ImportOptions{})
	if cerr := be.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("import: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	if _, err := verify(ctx, dataDir); err != nil {
		return nil, fmt.Errorf("import: the imported store in %s does not open: %w", dataDir, err)
	}
	return st, nil
}

// writeFile exports be into a temporary file beside file, syncs it and
// renames it into place, so file appears only complete.
func writeFile(ctx context.Context, be backend.Backend, file string, opts storeexport.ExportOptions) (_ *storeexport.Stats, err error) {
	if _, err := os.Lstat(file); err == nil {
		return nil, fmt.Errorf("export to %s: %w", file, ErrExists)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".partial-*")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			err = errors.Join(err, os.Remove(tmp.Name()))
		}
	}()
	st, err := storeexport.Export(ctx, be, tmp, opts)
	if err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	// Link, not rename: it fails if file appeared meanwhile.
	if err := os.Link(tmp.Name(), file); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := os.Remove(tmp.Name()); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return st, syncDir(filepath.Dir(file))
}

func report(file string, start, end time.Time, st *storeexport.Stats) *ExportReport {
	return &ExportReport{File: file, Started: start.UTC(), Objects: st.Objects, ObjectBytes: st.ObjectBytes, Log: st.Log,
		Records: st.Records, Refs: st.Refs, FileBytes: st.FileBytes, DurationSeconds: end.Sub(start).Seconds()}
}
