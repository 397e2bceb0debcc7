package icebergrest

import (
	"reflect"
	"testing"
)

// commonCommitBodies are requests decodeCommonCommit must decode itself.
var commonCommitBodies = []string{
	propertyCommitBody,
	`{"identifier":{"namespace":["db"],"name":"t"},"requirements":[{"type":"assert-table-uuid","uuid":"8d0ad0b8-7b56-4f3e-9a8e-1f2d3c4b5a69"}],"updates":[{"action":"set-properties","updates":{"a":"1","b":""}}]}`,
	"{ \"updates\" : [ { \"updates\" : { } , \"action\" : \"set-properties\" } ] ,\n\t\"requirements\" : [ ] }\r\n",
	`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null},{"snapshot-id":-42,"ref":"b","type":"assert-ref-snapshot-id"}],"updates":[]}`,
	`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"remove-properties","removals":["x","y"]},{"action":"remove-properties","removals":[]}]}`,
	`{"identifier":{"name":"t","namespace":[]}}`,
	`{"identifier":{}}`,
	`{}`,
	`{"requirements":[{"type":"assert-table-uuid","uuid":"8D0AD0B87B564F3E9A8E1F2D3C4B5A69"}]}`,
}

// uncommonCommitBodies are requests it leaves to the spec's decoding.
var uncommonCommitBodies = []string{
	`{"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":1}}]}`,
	`{"updates":[{"action":"set-properties","updated":{"a":"1"}}]}`,         // legacy field name
	`{"updates":[{"action":"set-properties","updates":{"a":"1"},"x":1}]}`,   // an extra field
	`{"updates":[{"action":"set-properties","updates":{"a":"1","a":"2"}}]}`, // a repeated key
	`{"updates":[{"action":"set-properties","updates":{"a":"\u00e9"}}]}`,    // an escape
	`{"updates":[{"action":"set-properties","updates":{"a":"é"}}]}`,         // non-ASCII
	`{"updates":[{"action":"set-properties","updates":null}]}`,              // null
	`{"Updates":[]}`, // a field name in another case
	`{"requirements":[{"type":"assert-table-uuid","uuid":"not-a-uuid"}]}`,                 // an invalid UUID: the spec's error
	`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1.0}]}`, // not an integer
	`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":01}]}`,
	`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":99999999999999999999}]}`,
	`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main"}]}`, // a missing field: the spec's error
	`{"requirements":[{"type":"assert-current-schema-id","current-schema-id":1}]}`,
	`{"identifier":null}`,
	`{"updates":[]} x`,
	`{"updates":[]}{}`,
	`{"updates":[],}`,
	`[]`,
	``,
}

func TestDecodeCommonCommit(t *testing.T) {
	for _, body := range commonCommitBodies {
		got, ok := decodeCommonCommit([]byte(body))
		if !ok {
			t.Errorf("decodeCommonCommit(%s): not decoded", body)
			continue
		}
		want, err := specDecodeCommit([]byte(body))
		if err != nil {
			t.Fatalf("the spec's decoding of %s: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeCommonCommit(%s) =\n%#v\nthe spec's decoding:\n%#v", body, got, want)
		}
	}
	for _, body := range uncommonCommitBodies {
		if _, ok := decodeCommonCommit([]byte(body)); ok {
			t.Errorf("decodeCommonCommit(%s) decoded it; want it left to the spec's decoding", body)
		}
	}
}

// FuzzDecodeCommonCommit: whatever decodeCommonCommit decodes, the spec's
// decoding decodes to the same request.
func FuzzDecodeCommonCommit(f *testing.F) {
	for _, body := range append(commonCommitBodies, uncommonCommitBodies...) {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeCommonCommit(data)
		if !ok {
			return
		}
		want, err := specDecodeCommit(data)
		if err != nil {
			t.Fatalf("decodeCommonCommit decoded %q, the spec's decoding refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeCommonCommit(%q) =\n%#v\nthe spec's decoding:\n%#v", data, got, want)
		}
	})
}

// specDecodeCommit decodes data as decodeJSONBody would without the
// common path: the spec's decoding, the same checks of the body.
func specDecodeCommit(data []byte) (commitTableRequest, error) {
	var req commitTableRequest
	err := decodeJSONBody(data, (*specCommitTableRequest)(&req))
	return req, err
}
