package icebergrest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// reply is a response built in full before it is written. Handlers that
// end in a catalog commit build their reply before committing, so that an
// idempotent request's reply can ride in the commit itself (see
// idempotency.go): what the client is sent is then byte for byte what a
// retry with the same key replays.
type reply struct {
	status int
	header map[string]string // set on the response, e.g. Content-Type, ETag
	// body is the response body in pieces sent one after the other, so
	// that a metadata file's bytes go out as they are rather than copied
	// into one buffer per answer (issue 14: that copy was a fifth of what
	// a commit allocated).
	body [][]byte
}

// bodyLen is the length of the body.
func (rp *reply) bodyLen() int {
	n := 0
	for _, p := range rp.body {
		n += len(p)
	}
	return n
}

// bodyBytes is the body in one slice; it copies only a body in pieces.
func (rp *reply) bodyBytes() []byte {
	switch len(rp.body) {
	case 0:
		return nil
	case 1:
		return rp.body[0]
	}
	return rp.appendBody(make([]byte, 0, rp.bodyLen()))
}

// appendBody appends the body to b.
func (rp *reply) appendBody(b []byte) []byte {
	for _, p := range rp.body {
		b = append(b, p...)
	}
	return b
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
		body:   [][]byte{body},
	}
}

// metadataReply is the 200 answering a table's metadata: the spec's
// LoadTableResult (with config, an encoded JSON object) or
// CommitTableResponse (config nil). It holds the same bytes jsonReply
// would encode for the struct {metadata-location, metadata[, config]},
// but is concatenated from parts known to be valid JSON, so a metadata
// file of half a megabyte is not re-compacted for every answer, nor
// copied: its bytes are a piece of the body as they are. metadata must be
// compact and HTML-escaped, as icebergtable.MetadataFile.JSON is, and
// config as json.Marshal writes it.
func metadataReply(location string, metadata, config []byte) *reply {
	loc, _ := json.Marshal(location) // a string always encodes
	const (
		open     = `{"metadata-location":`
		meta     = `,"metadata":`
		withConf = `,"config":`
		end      = "}\n"
	)
	head := make([]byte, 0, len(open)+len(loc)+len(meta))
	head = append(append(append(head, open...), loc...), meta...)
	var tail []byte
	if config != nil {
		tail = make([]byte, 0, len(withConf)+len(config)+len(end))
		tail = append(append(tail, withConf...), config...)
	}
	tail = append(tail, end...)
	rp := rawJSONReply(http.StatusOK, head)
	rp.body = append(rp.body, metadata, tail)
	return rp
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

// write sends the reply. A body in pieces is joined in one of joins'
// buffers (nil: a new one) and written at once: net/http sends a Write
// that overflows its 4 KiB buffer as a system call of its own, so the
// pieces of a metadata answer went out as three socket writes (the last
// one the two bytes that close it), where one joined body takes two.
// Each socket write on loopback also wakes the client once more.
func (rp *reply) write(w http.ResponseWriter, joins *joinBuffers) {
	h := w.Header()
	for k, v := range rp.header {
		h.Set(k, v)
	}
	n := rp.bodyLen()
	if n > 0 {
		// Known, so a body larger than net/http's buffer is not sent
		// chunked (more bytes, and a last write of its own).
		h.Set("Content-Length", strconv.Itoa(n))
	}
	w.WriteHeader(rp.status)
	switch len(rp.body) {
	case 0:
		return
	case 1:
		if len(rp.body[0]) > 0 {
			_, _ = w.Write(rp.body[0]) // an error: the client is gone
		}
		return
	}
	buf := joins.get(n)
	*buf = rp.appendBody((*buf)[:0])
	_, _ = w.Write(*buf)
	joins.put(buf) // a Writer does not retain what it was given
}

// joinBuffers are the scratch buffers reply.write joins a body in.
type joinBuffers struct{ pool sync.Pool }

// maxJoinBuffer is the largest buffer kept for reuse: big enough for the
// answers of tables with hundreds of snapshots, small enough that the
// pool never holds much memory.
const maxJoinBuffer = 1 << 20

func (j *joinBuffers) get(n int) *[]byte {
	if j != nil {
		if b, ok := j.pool.Get().(*[]byte); ok && cap(*b) >= n {
			return b
		} else if ok {
			j.pool.Put(b) // too small for this body; another may fit
		}
	}
	b := make([]byte, 0, n)
	return &b
}

func (j *joinBuffers) put(b *[]byte) {
	if j != nil && cap(*b) <= maxJoinBuffer {
		j.pool.Put(b)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	jsonReply(status, v).write(w, nil) // one piece: nothing to join
}
