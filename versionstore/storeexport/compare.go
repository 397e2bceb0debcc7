package storeexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// ErrDifferent reports two backends that do not hold the same history.
var ErrDifferent = errors.New("the stores differ")

// maxDifferences bounds how many differences Compare names.
const maxDifferences = 20

// Compare checks that a and b hold the same history, byte for byte: the
// same objects (every commit, tree node and content value) with the same
// bytes, the same references with the same values, the same reference log
// entries in the same order (their sequence numbers may differ: each
// backend numbers its own log) and the same records. Neither may be
// written to meanwhile. The error, wrapping ErrDifferent, names the first
// differences found.
//
// It reads both stores completely; memory stays bounded except for the
// references, which both backends list whole anyway.
func Compare(ctx context.Context, a, b backend.Backend) error {
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < maxDifferences {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}

	if err := compareObjects(ctx, a, b, add); err != nil {
		return err
	}

	refsA, err := a.ListRefs(ctx)
	if err != nil {
		return fmt.Errorf("compare: list references: %w", err)
	}
	refsB, err := b.ListRefs(ctx)
	if err != nil {
		return fmt.Errorf("compare: list references: %w", err)
	}
	inB := make(map[string][]byte, len(refsB))
	for _, r := range refsB {
		inB[r.Name] = r.Value
	}
	for _, r := range refsA {
		v, ok := inB[r.Name]
		switch {
		case !ok:
			add("reference %q is only in the first store", r.Name)
		case !bytes.Equal(v, r.Value):
			add("reference %q differs: %x against %x", r.Name, r.Value, v)
		}
		delete(inB, r.Name)
	}
	for name := range inB {
		add("reference %q is only in the second store", name)
	}

	if err := compareLogs(ctx, a, b, add); err != nil {
		return err
	}
	if err := compareRecords(ctx, a, b, add); err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrDifferent, strings.Join(diffs, "\n  "))
	}
	return nil
}

// compareObjects walks both stores' ids in order side by side.
func compareObjects(ctx context.Context, a, b backend.Backend, add func(string, ...any)) error {
	idsB := make(chan backend.ObjectID, objectPage)
	errB := make(chan error, 1)
	walkCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(idsB)
		errB <- eachObject(walkCtx, b, func(id backend.ObjectID) error {
			select {
			case idsB <- id:
				return nil
			case <-walkCtx.Done():
				return walkCtx.Err()
			}
		})
	}()
	next, more := <-idsB
	compareOne := func(id backend.ObjectID) error {
		da, err := a.GetObject(ctx, id)
		if err != nil {
			return fmt.Errorf("compare: read object %s: %w", id, err)
		}
		db, err := b.GetObject(ctx, id)
		if err != nil {
			return fmt.Errorf("compare: read object %s: %w", id, err)
		}
		if !bytes.Equal(da, db) {
			add("object %s differs", id)
		}
		return nil
	}
	err := eachObject(ctx, a, func(id backend.ObjectID) error {
		for more && bytes.Compare(next[:], id[:]) < 0 {
			add("object %s is only in the second store", next)
			next, more = <-idsB
		}
		if more && next == id {
			next, more = <-idsB
			return compareOne(id)
		}
		add("object %s is only in the first store", id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	for ; more; next, more = <-idsB {
		add("object %s is only in the second store", next)
	}
	if err := <-errB; err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

func compareLogs(ctx context.Context, a, b backend.Backend, add func(string, ...any)) error {
	// Newest first on both sides, a page at a time.
	beforeA, beforeB := uint64(0), uint64(0)
	n := 0
	for {
		pa, err := a.ReadLog(ctx, beforeA, logPage)
		if err != nil {
			return fmt.Errorf("compare: read the reference log: %w", err)
		}
		pb, err := b.ReadLog(ctx, beforeB, len(pa)+1)
		if err != nil {
			return fmt.Errorf("compare: read the reference log: %w", err)
		}
		for i, ra := range pa {
			if i >= len(pb) {
				add("the first store's reference log has %d more entries (from seq %d back)", len(pa)-i, ra.Seq)
				return nil
			}
			if !bytes.Equal(ra.Value, pb[i].Value) {
				add("reference log entry %d from the newest differs (seq %d against %d)", n+i, ra.Seq, pb[i].Seq)
			}
		}
		if len(pa) < logPage {
			if len(pb) > len(pa) {
				add("the second store's reference log has more entries (from seq %d back)", pb[len(pa)].Seq)
			}
			return nil
		}
		n += len(pa)
		beforeA, beforeB = pa[len(pa)-1].Seq, pb[len(pa)-1].Seq
	}
}

func compareRecords(ctx context.Context, a, b backend.Backend, add func(string, ...any)) error {
	for after := ""; ; {
		ra, err := a.ScanRecords(ctx, after, recordPage)
		if err != nil {
			return fmt.Errorf("compare: scan records: %w", err)
		}
		rb, err := b.ScanRecords(ctx, after, recordPage)
		if err != nil {
			return fmt.Errorf("compare: scan records: %w", err)
		}
		for i := 0; i < len(ra) || i < len(rb); i++ {
			switch {
			case i >= len(rb):
				add("record %q is only in the first store", ra[i].Key)
				return nil
			case i >= len(ra):
				add("record %q is only in the second store", rb[i].Key)
				return nil
			case ra[i].Key != rb[i].Key:
				add("records differ after %q: %q against %q", after, ra[i].Key, rb[i].Key)
				return nil
			case !bytes.Equal(ra[i].Value, rb[i].Value):
				add("record %q differs", ra[i].Key)
			}
		}
		if len(ra) < recordPage {
			return nil
		}
		after = ra[len(ra)-1].Key
	}
}
