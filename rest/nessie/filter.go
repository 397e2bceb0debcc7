package nessie

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// A filter is a small subset of CEL, enough for Nessie's documented
// filters: string, integer and boolean literals, list literals,
// variables with dotted names (ref, refType, entry.namespace, ...),
// ==, !=, <, <=, >, >=, in, !, && and ||, parentheses and the string
// methods startsWith, endsWith, contains and matches. It only reads the
// variables it is given; matches uses RE2, whose run time is linear, so no
// filter can run code or take unbounded time.

const (
	maxFilterBytes = 4096
	maxFilterDepth = 64
)

// filterVars are the variables a filter may read.
type filterVars map[string]any

type filter struct{ root node }

type node interface {
	eval(filterVars) (any, error)
}

// compileFilter parses expr; "" compiles to nil, which matches everything.
func compileFilter(expr string) (*filter, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, nil
	}
	if len(expr) > maxFilterBytes {
		return nil, badRequest("filter is longer than %d bytes", maxFilterBytes)
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, badRequest("bad filter %q: %v", expr, err)
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err == nil && p.peek().kind != tokEOF {
		err = fmt.Errorf("unexpected %q", p.peek().text)
	}
	if err != nil {
		return nil, badRequest("bad filter %q: %v", expr, err)
	}
	return &filter{root: n}, nil
}

// match evaluates the filter; a nil filter matches everything.
func (f *filter) match(vars filterVars) (bool, error) {
	if f == nil {
		return true, nil
	}
	v, err := f.root.eval(vars)
	if err != nil {
		return false, badRequest("filter: %v", err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, badRequest("filter does not evaluate to a boolean")
	}
	return b, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokInt
	tokOp
)

type token struct {
	kind tokKind
	text string
	val  any
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(s[j])
					}
					continue
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{kind: tokString, text: s[i : j+1], val: b.String()})
			i = j + 1
		case c >= '0' && c <= '9' || c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, err := strconv.ParseInt(s[i:j], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad number %q", s[i:j])
			}
			out = append(out, token{kind: tokInt, text: s[i:j], val: n})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{kind: tokIdent, text: s[i:j]})
			i = j
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ",", "."} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected character %q at %d", c, i)
			}
			out = append(out, token{kind: tokOp, text: op})
			i += len(op)
		}
	}
	return append(out, token{kind: tokEOF, text: "end of filter"}), nil
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }
func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}
func (p *parser) expect(op string) error {
	if !p.isOp(op) {
		return fmt.Errorf("expected %q, found %q", op, p.peek().text)
	}
	p.pos++
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxFilterDepth {
		return fmt.Errorf("nested deeper than %d", maxFilterDepth)
	}
	return nil
}

func (p *parser) or() (node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	l, err := p.and()
	for err == nil && p.isOp("||") {
		p.pos++
		var r node
		if r, err = p.and(); err == nil {
			l = logicNode{or: true, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) and() (node, error) {
	l, err := p.unary()
	for err == nil && p.isOp("&&") {
		p.pos++
		var r node
		if r, err = p.unary(); err == nil {
			l = logicNode{l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) unary() (node, error) {
	if p.isOp("!") {
		p.pos++
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		n, err := p.unary()
		return notNode{n}, err
	}
	return p.compare()
}

func (p *parser) compare() (node, error) {
	l, err := p.postfix()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tokOp && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=") ||
		t.kind == tokIdent && t.text == "in" {
		p.pos++
		r, err := p.postfix()
		if err != nil {
			return nil, err
		}
		return cmpNode{op: t.text, l: l, r: r}, nil
	}
	return l, nil
}

func (p *parser) postfix() (node, error) {
	n, err := p.primary()
	for err == nil && p.isOp(".") {
		p.pos++
		m := p.next()
		if m.kind != tokIdent {
			return nil, fmt.Errorf("expected a method name, found %q", m.text)
		}
		if err = p.expect("("); err != nil {
			return nil, err
		}
		var arg node
		if arg, err = p.or(); err != nil {
			return nil, err
		}
		if err = p.expect(")"); err != nil {
			return nil, err
		}
		switch m.text {
		case "startsWith", "endsWith", "contains":
			n = methodNode{name: m.text, recv: n, arg: arg}
		case "matches":
			lit, ok := arg.(litNode)
			s, isStr := lit.v.(string)
			if !ok || !isStr {
				return nil, fmt.Errorf("matches() needs a string literal")
			}
			re, rerr := regexp.Compile(s)
			if rerr != nil {
				return nil, fmt.Errorf("bad regular expression %q: %v", s, rerr)
			}
			n = matchNode{recv: n, re: re}
		default:
			return nil, fmt.Errorf("unknown method %s()", m.text)
		}
	}
	return n, err
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokString, tokInt:
		return litNode{t.val}, nil
	case tokIdent:
		switch t.text {
		case "true":
			return litNode{true}, nil
		case "false":
			return litNode{false}, nil
		}
		name := t.text
		// A dotted variable name continues while the next identifier is
		// not a method call.
		for p.isOp(".") && p.toks[p.pos+1].kind == tokIdent && !(p.toks[p.pos+2].kind == tokOp && p.toks[p.pos+2].text == "(") {
			name += "." + p.toks[p.pos+1].text
			p.pos += 2
		}
		return varNode{name}, nil
	case tokOp:
		switch t.text {
		case "(":
			n, err := p.or()
			if err != nil {
				return nil, err
			}
			return n, p.expect(")")
		case "[":
			var items listNode
			for !p.isOp("]") {
				n, err := p.or()
				if err != nil {
					return nil, err
				}
				items = append(items, n)
				if !p.isOp(",") {
					break
				}
				p.pos++
			}
			return items, p.expect("]")
		}
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

type litNode struct{ v any }

func (n litNode) eval(filterVars) (any, error) { return n.v, nil }

type varNode struct{ name string }

func (n varNode) eval(v filterVars) (any, error) {
	x, ok := v[n.name]
	if !ok {
		return nil, fmt.Errorf("unknown variable %q", n.name)
	}
	return x, nil
}

type listNode []node

func (n listNode) eval(v filterVars) (any, error) {
	out := make([]any, 0, len(n))
	for _, e := range n {
		x, err := e.eval(v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

type logicNode struct {
	or   bool
	l, r node
}

func (n logicNode) eval(v filterVars) (any, error) {
	l, err := evalBool(n.l, v)
	if err != nil {
		return nil, err
	}
	if l == n.or { // short-circuit: true || ..., false && ...
		return l, nil
	}
	return evalBool(n.r, v)
}

type notNode struct{ n node }

func (n notNode) eval(v filterVars) (any, error) {
	b, err := evalBool(n.n, v)
	return !b, err
}

func evalBool(n node, v filterVars) (bool, error) {
	x, err := n.eval(v)
	if err != nil {
		return false, err
	}
	b, ok := x.(bool)
	if !ok {
		return false, fmt.Errorf("%v is not a boolean", x)
	}
	return b, nil
}

type cmpNode struct {
	op   string
	l, r node
}

func (n cmpNode) eval(v filterVars) (any, error) {
	l, err := n.l.eval(v)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(v)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "==":
		return l == r, nil
	case "!=":
		return l != r, nil
	case "in":
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("the right side of 'in' must be a list")
		}
		for _, x := range list {
			if x == l {
				return true, nil
			}
		}
		return false, nil
	}
	var c int
	switch lv := l.(type) {
	case string:
		rv, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("cannot compare %v with %v", l, r)
		}
		c = strings.Compare(lv, rv)
	case int64:
		rv, ok := r.(int64)
		if !ok {
			return nil, fmt.Errorf("cannot compare %v with %v", l, r)
		}
		c = cmp.Compare(lv, rv)
	default:
		return nil, fmt.Errorf("cannot order %v", l)
	}
	switch n.op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	default:
		return c >= 0, nil
	}
}

type methodNode struct {
	name      string
	recv, arg node
}

func (n methodNode) eval(v filterVars) (any, error) {
	r, err := n.recv.eval(v)
	if err != nil {
		return nil, err
	}
	a, err := n.arg.eval(v)
	if err != nil {
		return nil, err
	}
	rs, ok1 := r.(string)
	as, ok2 := a.(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s() works on strings", n.name)
	}
	switch n.name {
	case "startsWith":
		return strings.HasPrefix(rs, as), nil
	case "endsWith":
		return strings.HasSuffix(rs, as), nil
	default:
		return strings.Contains(rs, as), nil
	}
}

type matchNode struct {
	recv node
	re   *regexp.Regexp
}

func (n matchNode) eval(v filterVars) (any, error) {
	r, err := n.recv.eval(v)
	if err != nil {
		return nil, err
	}
	s, ok := r.(string)
	if !ok {
		return nil, fmt.Errorf("matches() works on strings")
	}
	return n.re.MatchString(s), nil
}
