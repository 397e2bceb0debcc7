package icebergrest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/housekeeping/maintenance"
)

// TestMaintenanceKind: which commits the maintenance lock stops.
func TestMaintenanceKind(t *testing.T) {
	snap := func(op string) string {
		return `{"action":"add-snapshot","snapshot":{"snapshot-id":2,"sequence-number":2,"timestamp-ms":1,` +
			`"manifest-list":"file:///w/t/metadata/snap-2.avro","summary":{"operation":"` + op + `"}}}`
	}
	ref := `{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":2}`
	for _, tc := range []struct {
		name, updates, want string
	}{
		{"compaction", `[` + snap("replace") + `,` + ref + `]`, maintenance.KindRewrite},
		{"expiry", `[{"action":"remove-snapshot-ref","ref-name":"old"},{"action":"remove-snapshots","snapshot-ids":[1]}]`, maintenance.KindExpire},
		{"append", `[` + snap("append") + `,` + ref + `]`, ""},
		{"overwrite", `[` + snap("overwrite") + `,` + ref + `]`, ""},
		{"delete", `[` + snap("delete") + `,` + ref + `]`, ""},
		{"drop a table branch", `[{"action":"remove-snapshot-ref","ref-name":"audit"}]`, ""},
		{"properties", `[{"action":"set-properties","updates":{"a":"b"}}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req commitTableRequest
			if err := json.Unmarshal([]byte(`{"requirements":[],"updates":`+tc.updates+`}`), &req); err != nil {
				t.Fatal(err)
			}
			if req.fields == nil {
				t.Fatal("the updates' fields were not decoded with the request")
			}
			if got := maintenanceKind(&req); got != tc.want {
				t.Fatalf("kind %q, want %q", got, tc.want)
			}
			// A request built in code decodes each update when asked.
			built := commitTableRequest{Updates: req.Updates}
			if got := maintenanceKind(&built); got != tc.want {
				t.Fatalf("kind of the request built in code %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSnapshotMetricTablesBounded: past the limit, tables share one label.
func TestSnapshotMetricTablesBounded(t *testing.T) {
	h, err := newMaintenanceHooks(Deps{SnapshotMetricTables: 2}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 4 {
		got = append(got, h.tableLabel(identifier{Namespace: []string{"ns"}, Name: fmt.Sprint("t", i%3)}))
	}
	if want := []string{"ns.t0", "ns.t1", otherTables, "ns.t0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("labels %q, want %q", got, want)
	}
	off, err := newMaintenanceHooks(Deps{SnapshotMetricTables: -1}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if l := off.tableLabel(identifier{Namespace: []string{"ns"}, Name: "t"}); l != "" {
		t.Fatalf("label %q with table labels off", l)
	}
}
