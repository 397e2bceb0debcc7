package versionstore

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestScanRecords: a prefix's live records in key order, in pages,
// without expired ones or other prefixes' records.
func TestScanRecords(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := openTestStore(t, Options{Now: func() time.Time { return now }})
	ctx := t.Context()
	put := func(key string, expires time.Time) {
		t.Helper()
		if err := s.PutRecord(ctx, Record{Key: key, Value: []byte(key), Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		put(fmt.Sprintf("lock/%d", i), time.Time{})
	}
	put("lock/2x", now.Add(-time.Second)) // expired
	put("lock", time.Time{})              // the prefix itself is no key below it
	put("lock0", time.Time{})
	put("idem/1", time.Time{})

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		recs, next, err := s.ScanRecords(ctx, "lock/", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, r.Key)
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("scan does not end")
		}
		after = next
	}
	if want := []string{"lock/0", "lock/1", "lock/2", "lock/3", "lock/4"}; !slices.Equal(got, want) {
		t.Fatalf("scanned %q, want %q", got, want)
	}
	if _, _, err := s.ScanRecords(ctx, "lock/", "", 0); err == nil {
		t.Fatal("a scan of limit 0 was accepted")
	}
}
