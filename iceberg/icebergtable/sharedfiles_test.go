package icebergtable_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// TestServedJSON: a file with the shared-file properties is served byte for
// byte; one without (or with gc.enabled=true) gets them in both served
// forms, keeping everything else, and its MetadataFile is not changed.
func TestServedJSON(t *testing.T) {
	wh, _, _ := localWarehouse(t)
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		same  bool
	}{
		{"floe's", iceberg.Properties(icebergtable.SharedFileProperties()), true},
		{"none", iceberg.Properties{"owner": "x"}, false},
		{"gc on", iceberg.Properties{"owner": "x", "gc.enabled": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := withAppend(t, newTable(t, wh, tc.props), "", 7)
			raw, err := json.Marshal(meta)
			if err != nil {
				t.Fatal(err)
			}
			f, err := icebergtable.ParseTableMetadata("file:///wh/ns/t/metadata/00001-x.metadata.json", raw)
			if err != nil {
				t.Fatal(err)
			}
			served, err := f.ServedJSON()
			if err != nil {
				t.Fatal(err)
			}
			if tc.same != bytes.Equal(served, f.JSON) {
				t.Fatalf("served as is: %v, want %v", bytes.Equal(served, f.JSON), tc.same)
			}
			refs, err := f.RefSnapshotsOnly()
			if err != nil {
				t.Fatal(err)
			}
			for form, body := range map[string][]byte{"all": served, "refs": refs} {
				got, err := table.ParseMetadataBytes(body)
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				props := got.Properties()
				if props["gc.enabled"] != "false" || props["write.metadata.delete-after-commit.enabled"] != "false" {
					t.Fatalf("%s: properties %v", form, props)
				}
				if tc.props["owner"] != "" && props["owner"] != "x" {
					t.Fatalf("%s: lost a property: %v", form, props)
				}
				if got.TableUUID() != meta.TableUUID() || got.CurrentSnapshot().SnapshotID != 7 {
					t.Fatalf("%s: changed more than the properties: %s", form, body)
				}
			}
			if !bytes.Equal(f.Raw, raw) || f.Metadata.Properties()["gc.enabled"] != tc.props["gc.enabled"] {
				t.Fatal("serving changed the MetadataFile")
			}
		})
	}
}

func TestSharedFilePropertyAllowed(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       bool
	}{
		{"gc.enabled", "false", true},
		{"gc.enabled", "FALSE", true},
		{"gc.enabled", "true", false},
		{"gc.enabled", "TRUE", false},
		{"gc.enabled", "", false},
		{"write.metadata.delete-after-commit.enabled", "yes", false},
		{"write.metadata.delete-after-commit.enabled", "False", true},
		{"owner", "true", true},
	} {
		if got := icebergtable.SharedFilePropertyAllowed(tc.key, tc.value); got != tc.want {
			t.Errorf("SharedFilePropertyAllowed(%q, %q) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}
