package nessieclient

import (
	"errors"
	"fmt"
	"strings"

	"github.com/floe-catalog/floe/internal/nessiekey"
)

// ContentKey is Nessie's ContentKey: a namespace path and a name.
type ContentKey struct {
	Elements []string `json:"elements"`
}

// ParseKey parses the dotted form used on the command line, ns.sub.table.
// A '.' inside an element is written "\.", a backslash "\\".
func ParseKey(s string) (ContentKey, error) {
	if s == "" {
		return ContentKey{}, errors.New("content key is empty")
	}
	var k ContentKey
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return ContentKey{}, fmt.Errorf("content key %q ends in a backslash", s)
			}
			i++
			cur.WriteByte(s[i])
		case '.':
			k.Elements = append(k.Elements, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	k.Elements = append(k.Elements, cur.String())
	for _, e := range k.Elements {
		if e == "" {
			return ContentKey{}, fmt.Errorf("content key %q has an empty element", s)
		}
	}
	return k, nil
}

// String is the dotted form ParseKey reads.
func (k ContentKey) String() string {
	parts := make([]string, len(k.Elements))
	for i, e := range k.Elements {
		e = strings.ReplaceAll(e, `\`, `\\`)
		parts[i] = strings.ReplaceAll(e, ".", `\.`)
	}
	return strings.Join(parts, ".")
}

// PathForm is the key as Nessie (spec 2.2.0) writes it in a URL path
// segment or query parameter, before percent-encoding.
func (k ContentKey) PathForm() string { return nessiekey.EncodePath(k.Elements) }
