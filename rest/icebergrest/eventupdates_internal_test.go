package icebergrest

import (
	"encoding/json"
	"testing"
)

// TestDiffTableDocsRemovals: what the HTTP test cannot make floe do (it
// refuses to expire snapshots while the warehouse's GC is off), compared
// from two files: a tag dropped before the snapshots it held are
// expired, a moved branch, and nothing for an unchanged file.
func TestDiffTableDocsRemovals(t *testing.T) {
	doc := func(s string) *tableDoc {
		var d tableDoc
		if err := json.Unmarshal([]byte(s), &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	before := doc(`{"format-version":2,"table-uuid":"u","location":"l","properties":{"a":"1"},
		"snapshots":[{"snapshot-id":1},{"snapshot-id":2},{"snapshot-id":3}],
		"refs":{"main":{"snapshot-id":3,"type":"branch"},"old":{"snapshot-id":1,"type":"tag"}}}`)
	after := doc(`{"format-version":2,"table-uuid":"u","location":"l","properties":{"a":"1"},
		"snapshots":[{"snapshot-id":3},{"snapshot-id":4}],
		"refs":{"main":{"type":"branch","snapshot-id":4}}}`)
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	want := `[{"action":"remove-snapshot-ref","ref-name":"old"},{"action":"remove-snapshots","snapshot-ids":[1,2]},` +
		`{"action":"add-snapshot","snapshot":{"snapshot-id":4}},{"action":"set-snapshot-ref","ref-name":"main","snapshot-id":4,"type":"branch"}]`
	if got := js(diffTableDocs(before, after)); got != want {
		t.Fatalf("updates:\n%s\nwant\n%s", got, want)
	}
	if got := js(diffTableDocs(after, after)); got != `[]` {
		t.Fatalf("an unchanged file: %s", got)
	}
	// The same ref spelt another way is unchanged.
	same := doc(`{"format-version":2,"table-uuid":"u","location":"l","properties":{"a":"1"},
		"snapshots":[{"snapshot-id":3},{"snapshot-id":4}],"refs":{"main":{"snapshot-id":4, "type":"branch"}}}`)
	if got := js(diffTableDocs(after, same)); got != `[]` {
		t.Fatalf("a ref spelt otherwise: %s", got)
	}
}
