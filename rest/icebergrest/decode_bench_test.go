package icebergrest

import (
	"encoding/json"
	"testing"
)

// propertyCommitBody is the body of conformance/testkit/icebergpeers's property
// commit: one requirement, one set-properties update.
const propertyCommitBody = `{"requirements":[{"type":"assert-table-uuid","uuid":"8d0ad0b8-7b56-4f3e-9a8e-1f2d3c4b5a69"}],"updates":[{"action":"set-properties","updates":{"peerbench.value":"1234567890-42"}}]}`

func BenchmarkDecodeCommitTableRequest(b *testing.B) {
	data := []byte(propertyCommitBody)
	b.ReportAllocs()
	for b.Loop() {
		var req commitTableRequest
		if err := json.Unmarshal(data, &req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeCommonCommit(b *testing.B) {
	data := []byte(propertyCommitBody)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeCommonCommit(data); !ok {
			b.Fatal("not decoded")
		}
	}
}
