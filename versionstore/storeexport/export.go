package storeexport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// logPage and recordPage are how many log entries and records one backend
// call reads; variables so tests can make pages small.
var (
	logPage    = 1024
	recordPage = 1024
)

// ErrSourceChanged reports that the exported store was written to while
// the export ran, so the file might not be one consistent state. Export a
// snapshot instead: a stopped server's data directory, a backup, or a
// running server's export (which reads a Pebble checkpoint).
var ErrSourceChanged = errors.New("the store changed during the export")

// ExportOptions configure Export.
type ExportOptions struct {
	// Gzip compresses the whole file.
	Gzip bool
	// Source and Producer go into the header, for people.
	Source, Producer string
	// Now is the clock for the header; nil is time.Now.
	Now func() time.Time
}

// Stats count what an export wrote or an import read.
type Stats struct {
	Objects     int64 `json:"objects"`
	ObjectBytes int64 `json:"objectBytes"`
	Log         int64 `json:"log"`
	Records     int64 `json:"records"`
	Refs        int64 `json:"refs"`
	// FileBytes is the size of the file as written or read (compressed,
	// if it is).
	FileBytes int64 `json:"fileBytes"`
}

// Export writes every object, the reference log, every record and every
// reference of be to w. Memory stays bounded whatever the store's size:
// objects are listed a page of ids at a time and streamed one by one, the
// log and the records a page at a time.
//
// be must not be written to while Export runs: the backend interface has
// no snapshot, so a moving store could give a file that is no single
// state. Export checks the references and the newest log entry at the end
// and fails with ErrSourceChanged, without writing the trailer (so the
// file cannot be imported), if they moved.
func Export(ctx context.Context, be backend.Backend, w io.Writer, opts ExportOptions) (*Stats, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	refs, err := be.ListRefs(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: list references: %w", err)
	}
	newest, err := newestLogSeq(ctx, be)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}

	counted := &countingWriter{w: w}
	out := io.Writer(counted)
	var zw *gzip.Writer
	if opts.Gzip {
		zw = gzip.NewWriter(counted)
		out = zw
	}
	ew := newEntryWriter(out)
	st := &Stats{}
	if err := ew.raw([]byte(magic)); err != nil {
		return nil, fmt.Errorf("export: write: %w", err)
	}
	hdr, err := json.Marshal(Header{Format: "floe-export", Version: Version, Created: now().UTC().Format(time.RFC3339Nano),
		Source: opts.Source, Producer: opts.Producer})
	if err != nil {
		return nil, err
	}
	if err := ew.entry(kindHeader, hdr); err != nil {
		return nil, fmt.Errorf("export: write header: %w", err)
	}

	err = eachObject(ctx, be, func(id backend.ObjectID) error {
		data, err := be.GetObject(ctx, id)
		if err != nil {
			return fmt.Errorf("read object %s: %w", id, err)
		}
		if err := ew.entry(kindObject, id[:], data); err != nil {
			return fmt.Errorf("write object %s: %w", id, err)
		}
		st.Objects++
		st.ObjectBytes += int64(len(data))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}

	err = eachLogEntry(ctx, be, newest, func(r backend.LogRecord) error {
		st.Log++
		return ew.entry(kindLog, r.Value)
	})
	if err != nil {
		return nil, fmt.Errorf("export: reference log: %w", err)
	}

	for after := ""; ; {
		recs, err := be.ScanRecords(ctx, after, recordPage)
		if err != nil {
			return nil, fmt.Errorf("export: scan records after %q: %w", after, err)
		}
		for _, r := range recs {
			if err := ew.entry(kindRecord, namedPrefix(r.Key), r.Value); err != nil {
				return nil, fmt.Errorf("export: write record %q: %w", r.Key, err)
			}
			st.Records++
		}
		if len(recs) < recordPage {
			break
		}
		after = recs[len(recs)-1].Key
	}

	for _, r := range refs {
		if err := ew.entry(kindRef, namedPrefix(r.Name), r.Value); err != nil {
			return nil, fmt.Errorf("export: write reference %q: %w", r.Name, err)
		}
		st.Refs++
	}

	// The references and the log are checked again last: every ref move
	// appends to the log, so equal values mean nothing moved in between.
	refsAfter, err := be.ListRefs(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: list references: %w", err)
	}
	newestAfter, err := newestLogSeq(ctx, be)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if newestAfter != newest || !slices.EqualFunc(refs, refsAfter, func(a, b backend.Ref) bool {
		return a.Name == b.Name && bytes.Equal(a.Value, b.Value)
	}) {
		return nil, fmt.Errorf("export: %w (newest reference log entry %d, then %d)", ErrSourceChanged, newest, newestAfter)
	}

	tr, err := json.Marshal(Trailer{Objects: st.Objects, ObjectBytes: st.ObjectBytes, Log: st.Log, Records: st.Records, Refs: st.Refs,
		SHA256: hex.EncodeToString(ew.sum.Sum(nil))})
	if err != nil {
		return nil, err
	}
	if err := ew.entry(kindTrailer, tr); err != nil {
		return nil, fmt.Errorf("export: write trailer: %w", err)
	}
	if err := ew.w.Flush(); err != nil {
		return nil, fmt.Errorf("export: write: %w", err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("export: compress: %w", err)
		}
	}
	st.FileBytes = counted.n
	return st, nil
}

// newestLogSeq is the seq of the newest reference log entry, 0 if none.
func newestLogSeq(ctx context.Context, be backend.Backend) (uint64, error) {
	recs, err := be.ReadLog(ctx, 0, 1)
	if err != nil {
		return 0, fmt.Errorf("read the newest reference log entry: %w", err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	return recs[0].Seq, nil
}

// eachLogEntry calls fn with every log entry up to and including seq
// newest, oldest first. ReadLog pages newest first, so a first pass keeps
// only where each page starts (one number per page), and a second reads
// the pages again from the oldest, each reversed.
func eachLogEntry(ctx context.Context, be backend.Backend, newest uint64, fn func(backend.LogRecord) error) error {
	if newest == 0 {
		return nil
	}
	var starts []uint64 // the "before" of each page, newest page first
	for before := newest + 1; ; {
		recs, err := be.ReadLog(ctx, before, logPage)
		if err != nil {
			return fmt.Errorf("read before %d: %w", before, err)
		}
		if len(recs) == 0 {
			break
		}
		starts = append(starts, before)
		before = recs[len(recs)-1].Seq
		if len(recs) < logPage || before <= 1 {
			break
		}
	}
	for i := len(starts) - 1; i >= 0; i-- {
		recs, err := be.ReadLog(ctx, starts[i], logPage)
		if err != nil {
			return fmt.Errorf("read before %d: %w", starts[i], err)
		}
		for j := len(recs) - 1; j >= 0; j-- {
			if err := fn(recs[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
