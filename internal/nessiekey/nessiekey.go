package nessiekey

import "strings"

// EscapedChars are the characters that switch an encoded key to the spec
// 2.2.0 escaping, in which '*' is the escape character.
const EscapedChars = "./\\%"

// EncodePath returns the path form of a key as Nessie (spec 2.2.0) writes
// it, before percent-encoding: the elements joined by '.' when none holds
// '.', '/', '\' or '%', else a leading '.' and the escaped elements.
func EncodePath(elements []string) string {
	if !strings.ContainsAny(strings.Join(elements, ""), EscapedChars) {
		return strings.Join(elements, ".")
	}
	var b strings.Builder
	b.WriteByte('.')
	for i, e := range elements {
		if i > 0 {
			b.WriteByte('.')
		}
		for _, c := range e {
			switch c {
			case '.':
				b.WriteString("*.")
			case '*':
				b.WriteString("**")
			case '/':
				b.WriteString("*{")
			case '\\':
				b.WriteString("*}")
			case '%':
				b.WriteString("*[")
			default:
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}
