package manifestread

import (
	"fmt"
	"maps"
)

// node is one type of a writer schema, parsed from its JSON so that it can
// be written back with only its nullable unions changed.
type node struct {
	json     any     // the type as the schema spells it
	fields   []*node // a record's field types, in the order of json's "fields"
	items    *node   // an array's items or a map's values
	branches []*node // a union's branches
	nullable int     // for a union of null and one other type: the other's index; else -1
	nullSeen bool    // a nullable union: some value in the file is null
}

// primitives are the Avro type names that are not references to a named
// type.
var primitives = map[string]bool{
	"null": true, "boolean": true, "int": true, "long": true, "float": true,
	"double": true, "bytes": true, "string": true,
}

func parseNode(raw any) (*node, error) {
	n := &node{json: raw, nullable: -1}
	switch t := raw.(type) {
	case string:
		if !primitives[t] {
			// A reference to a named type defined elsewhere: narrowing the
			// definition would change the reference's type too, without the
			// reference's values having been observed.
			return nil, fmt.Errorf("named type reference %q not supported", t)
		}
	case []any:
		for _, b := range t {
			bn, err := parseNode(b)
			if err != nil {
				return nil, err
			}
			n.branches = append(n.branches, bn)
		}
		if len(t) == 2 {
			for i, b := range t {
				if b == "null" {
					n.nullable = 1 - i
				}
			}
		}
	case map[string]any:
		switch t["type"] {
		case "record", "error":
			fields, _ := t["fields"].([]any)
			for _, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("record %v: a field is not an object", t["name"])
				}
				fn, err := parseNode(fm["type"])
				if err != nil {
					return nil, err
				}
				n.fields = append(n.fields, fn)
			}
		case "array", "map":
			key := "items"
			if t["type"] == "map" {
				key = "values"
			}
			in, err := parseNode(t[key])
			if err != nil {
				return nil, err
			}
			n.items = in
		case "enum", "fixed":
		default:
			s, ok := t["type"].(string)
			if !ok || !primitives[s] {
				return nil, fmt.Errorf("type %v not supported", t["type"])
			}
		}
	default:
		return nil, fmt.Errorf("schema node %T not supported", raw)
	}
	return n, nil
}

// observe records which nullable unions hold a null in the value v of n's
// type (as ocf decodes into any: records and maps as map[string]any,
// arrays as []any, a union as its branch's value).
func (n *node) observe(v any) {
	switch {
	case n.branches != nil:
		if v == nil {
			n.nullSeen = true
		} else if n.nullable >= 0 {
			n.branches[n.nullable].observe(v)
		}
		// A union of several non-null types is kept as it is, and so is
		// everything inside it: which branch a value took is not known here.
	case n.fields != nil:
		m, _ := v.(map[string]any)
		rec := n.json.(map[string]any)
		for i, f := range rec["fields"].([]any) {
			n.fields[i].observe(m[f.(map[string]any)["name"].(string)])
		}
	case n.items != nil:
		switch t := v.(type) {
		case []any:
			for _, e := range t {
				n.items.observe(e)
			}
		case map[string]any:
			for _, e := range t {
				n.items.observe(e)
			}
		}
	}
}

// narrow returns n's JSON with every nullable union that held no null
// replaced by its other branch, and whether anything was replaced.
func (n *node) narrow() (any, bool) {
	switch {
	case n.branches != nil:
		if n.nullable < 0 {
			return n.json, false
		}
		inner, changed := n.branches[n.nullable].narrow()
		if !n.nullSeen {
			return inner, true
		}
		out := make([]any, 2)
		out[n.nullable], out[1-n.nullable] = inner, "null"
		return out, changed
	case n.fields != nil:
		rec := maps.Clone(n.json.(map[string]any))
		src := rec["fields"].([]any)
		fields := make([]any, len(src))
		narrowed := false
		for i, f := range src {
			fm := maps.Clone(f.(map[string]any))
			t, changed := n.fields[i].narrow()
			if changed {
				fm["type"] = t
				if fm["default"] == nil && n.fields[i].nullable >= 0 && !n.fields[i].nullSeen {
					// A null default no longer matches the narrowed type.
					delete(fm, "default")
				}
				narrowed = true
			}
			fields[i] = fm
		}
		rec["fields"] = fields
		return rec, narrowed
	case n.items != nil:
		inner, changed := n.items.narrow()
		t := maps.Clone(n.json.(map[string]any))
		if id, ok := t["element-id"]; ok {
			// Iceberg names an array's element record r<element-id> (Java's
			// AvroSchemaUtil, iceberg-go's readers); Avro resolution matches
			// records by name, so another writer's name (DuckDB's element0)
			// fails even where every field resolves.
			rec, _ := inner.(map[string]any)
			if want := fmt.Sprintf("r%v", id); rec != nil && rec["type"] == "record" && rec["name"] != want {
				rec = maps.Clone(rec)
				rec["name"] = want
				inner, changed = rec, true
			}
		}
		if !changed {
			return n.json, false
		}
		if t["type"] == "map" {
			t["values"] = inner
		} else {
			t["items"] = inner
		}
		return t, true
	}
	return n.json, false
}
