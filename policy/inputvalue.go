package policy

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// astValue builds the Rego value of the input directly. rego.EvalInput
// would convert through a JSON round trip (encode, decode, convert), which
// BenchmarkInputConversion shows costs several times more; the field names
// here must match the json tags in input.go, and TestInputValueMatchesJSON
// checks that they do.
func (in *Input) astValue() ast.Value {
	terms := make([][2]*ast.Term, 0, 8)
	terms = append(terms,
		ast.Item(ast.InternedTerm("version"), ast.InternedTerm(in.Version)),
		ast.Item(ast.InternedTerm("principal"), ast.NewTerm(in.Principal.astValue())),
		ast.Item(ast.InternedTerm("action"), ast.StringTerm(string(in.Action))),
		ast.Item(ast.InternedTerm("api"), ast.StringTerm(in.API)),
		ast.Item(ast.InternedTerm("ref"), ast.NewTerm(in.Ref.astValue())),
	)
	if in.Target != nil {
		terms = append(terms, ast.Item(ast.InternedTerm("target"), ast.NewTerm(in.Target.astValue())))
	}
	if len(in.Contents) > 0 {
		cs := make([]*ast.Term, len(in.Contents))
		for i := range in.Contents {
			cs[i] = ast.NewTerm(in.Contents[i].astValue())
		}
		terms = append(terms, ast.Item(ast.InternedTerm("contents"), ast.ArrayTerm(cs...)))
	}
	if in.RequestID != "" {
		terms = append(terms, ast.Item(ast.InternedTerm("request_id"), ast.StringTerm(in.RequestID)))
	}
	return ast.NewObject(terms...)
}

func (p *Principal) astValue() ast.Value {
	return ast.NewObject(
		ast.Item(ast.InternedTerm("id"), ast.StringTerm(p.ID)),
		// Groups marshals as null when nil; keep that so both paths agree.
		ast.Item(ast.InternedTerm("groups"), stringsTerm(p.Groups, true)),
		ast.Item(ast.InternedTerm("anonymous"), ast.InternedTerm(p.Anonymous)),
	)
}

func (r *Ref) astValue() ast.Value {
	return ast.NewObject(
		ast.Item(ast.InternedTerm("name"), ast.StringTerm(r.Name)),
		ast.Item(ast.InternedTerm("type"), ast.StringTerm(r.Type)),
	)
}

func (c *Content) astValue() ast.Value {
	terms := make([][2]*ast.Term, 0, 4)
	terms = append(terms, ast.Item(ast.InternedTerm("key"), stringsTerm(c.Key, true)))
	if c.Type != "" {
		terms = append(terms, ast.Item(ast.InternedTerm("type"), ast.StringTerm(c.Type)))
	}
	terms = append(terms, ast.Item(ast.InternedTerm("change"), ast.StringTerm(c.Change)))
	if c.Iceberg != nil {
		terms = append(terms, ast.Item(ast.InternedTerm("iceberg"), ast.NewTerm(c.Iceberg.astValue())))
	}
	return ast.NewObject(terms...)
}

func (ic *IcebergChange) astValue() ast.Value {
	terms := make([][2]*ast.Term, 0, 3)
	if len(ic.Operations) > 0 {
		terms = append(terms, ast.Item(ast.InternedTerm("operations"), stringsTerm(ic.Operations, false)))
	}
	if len(ic.Updates) > 0 {
		terms = append(terms, ast.Item(ast.InternedTerm("updates"), stringsTerm(ic.Updates, false)))
	}
	if len(ic.Branches) > 0 {
		terms = append(terms, ast.Item(ast.InternedTerm("branches"), stringsTerm(ic.Branches, false)))
	}
	return ast.NewObject(terms...)
}

// stringsTerm mirrors encoding/json: a nil slice without omitempty is null.
func stringsTerm(ss []string, nilIsNull bool) *ast.Term {
	if ss == nil && nilIsNull {
		return ast.InternedNullTerm
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(ts...)
}
