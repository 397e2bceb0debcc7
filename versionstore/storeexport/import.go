package storeexport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// ErrNotEmpty reports an import target that already holds a history:
// references, reference log entries or records. Objects alone do not
// count: they are invisible without a reference, and are what an earlier
// import that failed leaves behind, so that import can simply be run again.
var ErrNotEmpty = errors.New("the target store is not empty")

// objectBatchBytes and objectBatchCount bound one batch of imported
// objects, and so the memory objects take during an import.
const (
	objectBatchBytes = 8 << 20
	objectBatchCount = 4096
)

// Import reads an export from r into be, which must be empty (see
// ErrNotEmpty); a gzip-compressed file is recognised by its first bytes.
//
// Objects are written in bounded batches as they arrive, each one's
// SHA-256 checked against its id first. The reference log, the records
// and the references are held until the trailer has been read and the
// file's checksum and counts match, and are then written in one atomic
// batch, the references last in the sense that matters: until that batch,
// nothing of the import is visible, so a truncated, corrupt or interrupted
// import leaves only unreachable objects behind, and running it again
// completes it. That last batch takes memory in proportion to the log (a
// log entry is about 120 bytes) and the records.
func Import(ctx context.Context, be backend.Backend, r io.Reader, opts ImportOptions) (*Stats, error) {
	if err := checkEmpty(ctx, be); err != nil {
		return nil, err
	}
	counted := &countingReader{r: r}
	br := bufio.NewReader(counted)
	in := io.Reader(br)
	if head, err := br.Peek(2); err == nil && bytes.Equal(head, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("import: %w: gzip: %v", ErrFormat, err)
		}
		defer zr.Close()
		in = zr
	}
	er := newEntryReader(in)
	if err := er.readMagic(); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}

	st := &Stats{}
	var final backend.Batch
	var batch []backend.Object
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := be.Apply(ctx, backend.Batch{Objects: batch}); err != nil {
			return fmt.Errorf("write %d objects: %w", len(batch), err)
		}
		batch, batchBytes = nil, 0
		return nil
	}

	// section is the kind of the entries being read; entries must come in
	// the order header, objects, log, records, refs, trailer.
	order := string([]byte{kindHeader, kindObject, kindLog, kindRecord, kindRef, kindTrailer})
	section := -1
	var lastID *backend.ObjectID
	var lastName string
	var trailer *Trailer
	var trailerSum []byte
	for {
		kind, payload, sumBefore, err := er.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		at := er.n
		if trailer != nil {
			return nil, fmt.Errorf("import: %w: data after the trailer (byte %d)", ErrFormat, at)
		}
		pos := strings.IndexByte(order, kind)
		switch {
		case pos < 0:
			return nil, fmt.Errorf("import: %w: unknown entry kind %q before byte %d", ErrFormat, kind, at)
		case pos < section, pos == section && (kind == kindHeader || kind == kindTrailer):
			return nil, fmt.Errorf("import: %w: entry of kind %q out of order before byte %d", ErrFormat, kind, at)
		case section < 0 && kind != kindHeader:
			return nil, fmt.Errorf("import: %w: no header", ErrFormat)
		}
		if pos != section {
			lastName = ""
		}
		section = pos

		switch kind {
		case kindHeader:
			var h Header
			if err := json.Unmarshal(payload, &h); err != nil || h.Format != "floe-export" {
				return nil, fmt.Errorf("import: %w: malformed header", ErrFormat)
			}
			if h.Version != Version {
				return nil, fmt.Errorf("import: %w: format version %d, this build reads %d", ErrFormat, h.Version, Version)
			}
			if opts.OnHeader != nil {
				opts.OnHeader(h)
			}
		case kindObject:
			if len(payload) < len(backend.ObjectID{}) {
				return nil, fmt.Errorf("import: %w: object entry of %d bytes before byte %d", ErrFormat, len(payload), at)
			}
			var id backend.ObjectID
			copy(id[:], payload)
			data := payload[len(id):]
			if sum := sha256.Sum256(data); sum != id {
				return nil, fmt.Errorf("import: %w: object %s holds bytes whose SHA-256 is %x", ErrFormat, id, sum)
			}
			if lastID != nil && bytes.Compare(lastID[:], id[:]) >= 0 {
				return nil, fmt.Errorf("import: %w: object %s out of order after %s", ErrFormat, id, lastID)
			}
			lastID = &id
			batch = append(batch, backend.Object{ID: id, Data: bytes.Clone(data)})
			batchBytes += len(data)
			st.Objects++
			st.ObjectBytes += int64(len(data))
			if batchBytes >= objectBatchBytes || len(batch) >= objectBatchCount {
				if err := flush(); err != nil {
					return nil, fmt.Errorf("import: %w", err)
				}
			}
		case kindLog:
			final.Log = append(final.Log, bytes.Clone(payload))
			st.Log++
		case kindRecord, kindRef:
			name, value, err := splitNamed(payload)
			if err != nil || name == "" {
				return nil, fmt.Errorf("import: %w: entry of kind %q before byte %d: malformed name", ErrFormat, kind, at)
			}
			if lastName != "" && name <= lastName {
				return nil, fmt.Errorf("import: %w: %q out of order after %q", ErrFormat, name, lastName)
			}
			lastName = name
			if kind == kindRecord {
				final.Records = append(final.Records, backend.Record{Key: name, Value: bytes.Clone(value)})
				st.Records++
			} else {
				final.Refs = append(final.Refs, backend.RefUpdate{Name: name, New: bytes.Clone(value)})
				st.Refs++
			}
		case kindTrailer:
			trailer = &Trailer{}
			if err := json.Unmarshal(payload, trailer); err != nil {
				return nil, fmt.Errorf("import: %w: malformed trailer", ErrFormat)
			}
			trailerSum = sumBefore
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	if trailer == nil {
		return nil, fmt.Errorf("import: %w: no trailer after %d bytes: the file is truncated", ErrFormat, er.n)
	}
	if got := hex.EncodeToString(trailerSum); got != trailer.SHA256 {
		return nil, fmt.Errorf("import: %w: the file's SHA-256 is %s, its trailer says %s", ErrFormat, got, trailer.SHA256)
	}
	want := Stats{Objects: trailer.Objects, ObjectBytes: trailer.ObjectBytes, Log: trailer.Log, Records: trailer.Records, Refs: trailer.Refs}
	if got := (Stats{Objects: st.Objects, ObjectBytes: st.ObjectBytes, Log: st.Log, Records: st.Records, Refs: st.Refs}); got != want {
		return nil, fmt.Errorf("import: %w: read %+v, the trailer says %+v", ErrFormat, got, want)
	}
	if len(final.Refs) == 0 {
		return nil, fmt.Errorf("import: %w: the export holds no reference", ErrFormat)
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	// The one batch that makes the import visible. Expected nil on every
	// reference: if anything created one meanwhile, nothing is written.
	if err := checkEmpty(ctx, be); err != nil {
		return nil, err
	}
	if err := be.Apply(ctx, final); err != nil {
		return nil, fmt.Errorf("import: write %d references, %d log entries and %d records: %w", len(final.Refs), len(final.Log), len(final.Records), err)
	}
	// The compressed stream may hold bytes past the gzip end; count what
	// was consumed.
	st.FileBytes = counted.n
	return st, nil
}

// ImportOptions configure Import.
type ImportOptions struct {
	// OnHeader, if set, is called with the file's header once it is read.
	OnHeader func(Header)
}

// checkEmpty refuses a target with references, log entries or records.
func checkEmpty(ctx context.Context, be backend.Backend) error {
	refs, err := be.ListRefs(ctx)
	if err != nil {
		return fmt.Errorf("import: list the target's references: %w", err)
	}
	if len(refs) > 0 {
		return fmt.Errorf("import: %w: it has %d references (%s, ...)", ErrNotEmpty, len(refs), refs[0].Name)
	}
	logs, err := be.ReadLog(ctx, 0, 1)
	if err != nil {
		return fmt.Errorf("import: read the target's reference log: %w", err)
	}
	if len(logs) > 0 {
		return fmt.Errorf("import: %w: its reference log has entries", ErrNotEmpty)
	}
	recs, err := be.ScanRecords(ctx, "", 1)
	if err != nil {
		return fmt.Errorf("import: scan the target's records: %w", err)
	}
	if len(recs) > 0 {
		return fmt.Errorf("import: %w: it has records (%s, ...)", ErrNotEmpty, recs[0].Key)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
