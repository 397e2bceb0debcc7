package manifestread

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// ReadList decodes the manifest list in data. A list iceberg-go reads as it is
// is returned unchanged; one it refuses is normalized (Normalize) and read
// again, and if that does not help the first error is returned.
func ReadList(data []byte) ([]iceberg.ManifestFile, error) {
	list, err := iceberg.ReadManifestList(bytes.NewReader(data))
	if err == nil {
		return list, nil
	}
	normalized, changed, nerr := Normalize(data)
	if nerr != nil || !changed {
		return nil, err
	}
	list, rerr := iceberg.ReadManifestList(bytes.NewReader(normalized))
	if rerr != nil {
		// The normalized file is not the one on disk: report the error the
		// original gave.
		return nil, err
	}
	return list, nil
}

// ReadManifest decodes the entries of the manifest mf, whose file is data,
// as iceberg.ReadManifest does. iceberg-go refuses a manifest whose
// header's content ("data" or "deletes") is not the one its manifest list
// gives; DuckDB 1.4 writes "data" into the header of its delete manifests.
// The list's content is what readers go by (Java reads it from the list),
// so such a manifest is read again with the list's content in its header.
func ReadManifest(mf iceberg.ManifestFile, data []byte, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	entries, err := iceberg.ReadManifest(mf, bytes.NewReader(data), discardDeleted)
	if err == nil {
		return entries, nil
	}
	want := "data"
	if mf.ManifestContent() == iceberg.ManifestContentDeletes {
		want = "deletes"
	}
	fixed, changed, ferr := rewrite(data, func(meta map[string][]byte) bool {
		if string(meta["content"]) == want {
			return false
		}
		meta["content"] = []byte(want)
		return true
	}, nil)
	if ferr != nil || !changed {
		return nil, err
	}
	entries, rerr := iceberg.ReadManifest(mf, bytes.NewReader(fixed), discardDeleted)
	if rerr != nil {
		return nil, err
	}
	return entries, nil
}

// Normalize re-encodes the Avro object container file data with the schema
// Iceberg's own writers would have given the same values: every
// ["null", T] union that holds no null in the file becomes T, and an array's
// element record is named r<element-id>. It reports whether the schema
// changed. The values and the header's metadata (other than the avro.* keys)
// are kept; blocks are written uncompressed. A reader whose field is T, or a
// union with T, resolves the normalized schema wherever it would resolve the
// original's values.
func Normalize(data []byte) ([]byte, bool, error) {
	return rewrite(data, nil, func(raw any, rows []any) (any, bool, error) {
		root, err := parseNode(raw)
		if err != nil {
			return nil, false, err
		}
		for _, v := range rows {
			root.observe(v)
		}
		normalized, changed := root.narrow()
		return normalized, changed, nil
	})
}

// rewrite decodes the Avro object container file data and, when editMeta
// changes its header's metadata (other than the avro.* keys) or
// editSchema its writer schema (given as parsed JSON, with every datum),
// encodes the same data anew under them, uncompressed. A nil edit changes
// nothing.
func rewrite(data []byte, editMeta func(map[string][]byte) bool, editSchema func(raw any, rows []any) (any, bool, error)) ([]byte, bool, error) {
	rd, err := ocf.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, false, fmt.Errorf("read the Avro header: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(rd.Metadata()["avro.schema"]))
	dec.UseNumber() // field ids and defaults keep their exact text
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, false, fmt.Errorf("parse the writer schema: %w", err)
	}
	var rows []any
	for {
		var v any
		if err := rd.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, false, fmt.Errorf("decode datum %d: %w", len(rows), err)
		}
		rows = append(rows, v)
	}
	meta := maps.Clone(rd.Metadata())
	maps.DeleteFunc(meta, func(k string, _ []byte) bool { return strings.HasPrefix(k, "avro.") })
	metaChanged := editMeta != nil && editMeta(meta)
	schema, schemaChanged := rd.Schema(), false
	if editSchema != nil {
		edited, changed, err := editSchema(raw, rows)
		if err != nil {
			return nil, false, err
		}
		if changed {
			text, err := json.Marshal(edited)
			if err != nil {
				return nil, false, fmt.Errorf("encode the rewritten schema: %w", err)
			}
			if schema, err = avro.Parse(string(text)); err != nil {
				return nil, false, fmt.Errorf("parse the rewritten schema: %w", err)
			}
			schemaChanged = true
		}
	}
	if !metaChanged && !schemaChanged {
		return data, false, nil
	}
	var out bytes.Buffer
	w, err := ocf.NewWriter(&out, schema, ocf.WithMetadata(meta))
	if err != nil {
		return nil, false, fmt.Errorf("write the rewritten file: %w", err)
	}
	for i, v := range rows {
		if err := w.Encode(v); err != nil {
			return nil, false, fmt.Errorf("encode datum %d: %w", i, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, false, fmt.Errorf("write the rewritten file: %w", err)
	}
	return out.Bytes(), true, nil
}

// Entries yields the entries of the manifest mf as
// iceberg.EntriesWithProjection does (streaming, without column
// statistics, deleted entries discarded), for scans of every manifest of a
// warehouse. A manifest iceberg-go refuses before its first entry is read
// whole, if it has at most limit bytes, and decoded by ReadManifest
// instead.
func Entries(fsys iceio.IO, mf iceberg.ManifestFile, limit int64) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(yield func(iceberg.ManifestEntry, error) bool) {
		seen := false
		for entry, err := range iceberg.EntriesWithProjection(fsys, mf, true, iceberg.ManifestEntryProjection{}) {
			if err != nil && !seen && !errors.Is(err, fs.ErrNotExist) {
				entries, rerr := readWhole(fsys, mf, limit)
				if errors.Is(rerr, errTooLarge) {
					err = errors.Join(err, rerr)
				}
				if rerr != nil {
					yield(nil, err)
					return
				}
				for _, e := range entries {
					if !yield(e, nil) {
						return
					}
				}
				return
			}
			seen = true
			if !yield(entry, err) || err != nil {
				return
			}
		}
	}
}

// errTooLarge: a manifest to read whole has more bytes than the limit.
var errTooLarge = errors.New("manifest exceeds the read limit")

func readWhole(fsys iceio.IO, mf iceberg.ManifestFile, limit int64) (_ []iceberg.ManifestEntry, err error) {
	f, err := fsys.Open(mf.FilePath())
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w of %d bytes", mf.FilePath(), errTooLarge, limit)
	}
	return ReadManifest(mf, data, true)
}
