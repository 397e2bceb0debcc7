package versionstore

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestContentEncodingStable pins the stored encoding of contents: a content
// is named by the hash of these bytes, so any change would give every table
// a new hash and make stored trees disagree with new writes. The expected
// bytes were produced before the unused metadata-blob field was removed;
// its slot is still written, as zeros.
func TestContentEncodingStable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    *Content
		want string
	}{
		{"table",
			&Content{Type: IcebergTable, ID: "id-1", MetadataLocation: "s3://w/t/m.json", UUID: "u", SnapshotID: 7, SchemaID: 1, SpecID: 2, SortOrderID: 3, LastSequenceNumber: 4},
			"7601020469642d310f73333a2f2f772f742f6d2e6a736f6e01750e0204060800000000000000000000000000000000000000000000000000000000000000000000"},
		{"namespace",
			&Content{Type: Namespace, ID: "ns-1", Properties: map[string]string{"owner": "ann"}},
			"760101046e732d310000000000000000000000000000000000000000000000000000000000000000000000000000000001056f776e657203616e6e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := hex.DecodeString(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeContent(tc.c); !bytes.Equal(got, want) {
				t.Fatalf("encoding changed:\n got %x\nwant %x", got, want)
			}
			got, err := decodeContent(want)
			if err != nil || !got.Equal(tc.c) {
				t.Fatalf("decode: %+v, %v; want %+v", got, err, tc.c)
			}
		})
	}
}

// TestContentDecodesFilledBlobSlot checks that a content whose retired
// metadata-blob slot holds a hash, as the old format allowed, still decodes.
func TestContentDecodesFilledBlobSlot(t *testing.T) {
	t.Parallel()
	c := &Content{Type: IcebergTable, ID: "id-1", MetadataLocation: "s3://w/t/m.json"}
	b := encodeContent(c)
	// The slot is the 32 bytes before the properties map (one byte, 0,
	// for an empty map).
	slot := b[len(b)-1-32 : len(b)-1]
	if !bytes.Equal(slot, make([]byte, 32)) {
		t.Fatalf("slot not where expected: %x", b)
	}
	for i := range slot {
		slot[i] = 0xab
	}
	got, err := decodeContent(b)
	if err != nil || !got.Equal(c) {
		t.Fatalf("decode with a filled slot: %+v, %v", got, err)
	}
}
