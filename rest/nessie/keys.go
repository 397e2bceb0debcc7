package nessie

import (
	"strings"

	"github.com/floe-catalog/floe/internal/nessiekey"
	"github.com/floe-catalog/floe/versionstore"
)

// keyJSON is Nessie's ContentKey.
type keyJSON struct {
	Elements []string `json:"elements"`
}

func keyToJSON(k versionstore.ContentKey) *keyJSON {
	return &keyJSON{Elements: append([]string{}, k...)}
}

func (k *keyJSON) key() (versionstore.ContentKey, error) {
	if k == nil || len(k.Elements) == 0 {
		return nil, badRequest("content key must have at least one element")
	}
	ck := versionstore.ContentKey(append([]string{}, k.Elements...))
	if err := ck.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	return ck, nil
}

// legacyDot stands for '.' inside an element in the legacy path encoding.
const legacyDot = '\x1d'

// encodeKeyPath returns the path form of a key as Nessie (spec 2.2.0)
// writes it; see nessiekey.EncodePath.
func encodeKeyPath(k versionstore.ContentKey) string { return nessiekey.EncodePath(k) }

// encodeKeyLegacy returns the legacy path form: elements joined by '.',
// with '.' inside an element written as 0x1D. CEL filters use it.
func encodeKeyLegacy(k versionstore.ContentKey) string {
	parts := make([]string, len(k))
	for i, e := range k {
		parts[i] = strings.ReplaceAll(e, ".", string(legacyDot))
	}
	return strings.Join(parts, ".")
}

// decodeKeyPath parses either encoding: a leading '.' marks the spec 2.2.0
// escaping (a legacy key never starts with an empty element), anything
// else is the legacy form.
func decodeKeyPath(s string) (versionstore.ContentKey, error) {
	if s == "" {
		return nil, badRequest("content key is empty")
	}
	var k versionstore.ContentKey
	if s[0] != '.' {
		for _, e := range strings.Split(s, ".") {
			k = append(k, strings.ReplaceAll(e, string(legacyDot), "."))
		}
	} else {
		var cur strings.Builder
		rs := []rune(s[1:])
		for i := 0; i < len(rs); i++ {
			switch c := rs[i]; c {
			case '.':
				k = append(k, cur.String())
				cur.Reset()
			case '*':
				if i+1 == len(rs) {
					return nil, badRequest("content key %q ends in an escape character", s)
				}
				i++
				switch rs[i] {
				case '.':
					cur.WriteByte('.')
				case '*':
					cur.WriteByte('*')
				case '{':
					cur.WriteByte('/')
				case '}':
					cur.WriteByte('\\')
				case '[':
					cur.WriteByte('%')
				default:
					return nil, badRequest("content key %q has an unknown escape *%c", s, rs[i])
				}
			default:
				cur.WriteRune(c)
			}
		}
		k = append(k, cur.String())
	}
	if err := k.Validate(); err != nil {
		return nil, badRequest("bad content key %q: %v", s, err)
	}
	return k, nil
}

// keyParams decodes every value of a repeatable key query parameter.
func keyParams(vals []string) ([]versionstore.ContentKey, error) {
	out := make([]versionstore.ContentKey, 0, len(vals))
	for _, v := range vals {
		k, err := decodeKeyPath(v)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// optionalKey decodes an optional key query parameter.
func optionalKey(v string) (versionstore.ContentKey, error) {
	if v == "" {
		return nil, nil
	}
	return decodeKeyPath(v)
}
