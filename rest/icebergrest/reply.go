package icebergrest

import (
	"encoding/json"
	"net/http"
)

// reply is a response built in full before it is written. Handlers that
// end in a catalog commit build their reply before committing, so that an
// idempotent request's reply can ride in the commit itself (see
// idempotency.go): what the client is sent is then byte for byte what a
// retry with the same key replays.
type reply struct {
	status int
	header map[string]string // set on the response, e.g. Content-Type, ETag
	body   []byte
}

// jsonReply encodes v as the JSON body of a reply.
func jsonReply(status int, v any) *reply {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding response","type":"InternalServerError","code":500}}`)
	}
	return rawJSONReply(status, append(b, '\n'))
}

// rawJSONReply is a reply whose body is already-encoded JSON.
func rawJSONReply(status int, body []byte) *reply {
	return &reply{
		status: status,
		header: map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"},
		body:   body,
	}
}

// metadataReply is the 200 answering a table's metadata: the spec's
// LoadTableResult (withConfig) or CommitTableResponse. It holds the same
// bytes jsonReply would encode for the struct
// {metadata-location, metadata[, config: {}]}, but is concatenated from
// parts known to be valid JSON, so a metadata file of half a megabyte is
// not re-compacted for every answer. metadata must be compact and
// HTML-escaped, as icebergtable.MetadataFile.JSON is.
func metadataReply(location string, metadata []byte, withConfig bool) *reply {
	loc, _ := json.Marshal(location) // a string always encodes
	const (
		open   = `{"metadata-location":`
		meta   = `,"metadata":`
		config = `,"config":{}`
	)
	b := make([]byte, 0, len(open)+len(loc)+len(meta)+len(metadata)+len(config)+2)
	b = append(b, open...)
	b = append(b, loc...)
	b = append(b, meta...)
	b = append(b, metadata...)
	if withConfig {
		b = append(b, config...)
	}
	b = append(b, "}\n"...)
	return rawJSONReply(http.StatusOK, b)
}

// noContent is the 204 of drops, renames and transactions.
func noContent() *reply { return &reply{status: http.StatusNoContent} }

// withETag adds an ETag header.
func (rp *reply) withETag(tag string) *reply {
	if rp.header == nil {
		rp.header = map[string]string{}
	}
	rp.header["ETag"] = tag
	return rp
}

// write sends the reply.
func (rp *reply) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range rp.header {
		h.Set(k, v)
	}
	w.WriteHeader(rp.status)
	if len(rp.body) > 0 {
		_, _ = w.Write(rp.body)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	jsonReply(status, v).write(w)
}
