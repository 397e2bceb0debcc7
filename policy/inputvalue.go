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
		ast.Item(inputTerms.version, ast.InternedTerm(in.Version)),
		ast.Item(inputTerms.principal, ast.NewTerm(in.Principal.astValue())),
		ast.Item(inputTerms.action, stringTerm(string(in.Action))),
		ast.Item(inputTerms.api, stringTerm(in.API)),
		ast.Item(inputTerms.ref, ast.NewTerm(in.Ref.astValue())),
	)
	if in.Target != nil {
		terms = append(terms, ast.Item(inputTerms.target, ast.NewTerm(in.Target.astValue())))
	}
	if len(in.Contents) > 0 {
		cs := make([]*ast.Term, len(in.Contents))
		for i := range in.Contents {
			cs[i] = ast.NewTerm(in.Contents[i].astValue())
		}
		terms = append(terms, ast.Item(inputTerms.contents, ast.ArrayTerm(cs...)))
	}
	if in.Storage != nil {
		terms = append(terms, ast.Item(inputTerms.storage, ast.NewTerm(in.Storage.astValue())))
	}
	if in.RequestID != "" {
		terms = append(terms, ast.Item(inputTerms.requestID, ast.StringTerm(in.RequestID)))
	}
	return ast.NewObject(terms...)
}

func (s *StorageRequest) astValue() ast.Value {
	return ast.NewObject(
		ast.Item(inputTerms.provider, stringTerm(s.Provider)),
		ast.Item(inputTerms.method, stringTerm(s.Method)),
		ast.Item(inputTerms.operation, stringTerm(s.Operation)),
		ast.Item(inputTerms.bucket, ast.StringTerm(s.Bucket)),
		ast.Item(inputTerms.key, ast.StringTerm(s.Key)),
		ast.Item(inputTerms.table, stringsTerm(s.Table, true)),
		ast.Item(inputTerms.tableLocation, ast.StringTerm(s.TableLocation)),
	)
}

func (p *Principal) astValue() ast.Value {
	return ast.NewObject(
		ast.Item(inputTerms.id, ast.StringTerm(p.ID)),
		// Groups marshals as null when nil; keep that so both paths agree.
		ast.Item(inputTerms.groups, stringsTerm(p.Groups, true)),
		ast.Item(inputTerms.anonymous, ast.InternedTerm(p.Anonymous)),
	)
}

func (r *Ref) astValue() ast.Value {
	return ast.NewObject(
		ast.Item(inputTerms.name, ast.StringTerm(r.Name)),
		ast.Item(inputTerms.typ, stringTerm(r.Type)),
	)
}

func (c *Content) astValue() ast.Value {
	terms := make([][2]*ast.Term, 0, 4)
	terms = append(terms, ast.Item(inputTerms.key, stringsTerm(c.Key, true)))
	if c.Type != "" {
		terms = append(terms, ast.Item(inputTerms.typ, stringTerm(c.Type)))
	}
	terms = append(terms, ast.Item(inputTerms.change, stringTerm(c.Change)))
	if c.Iceberg != nil {
		terms = append(terms, ast.Item(inputTerms.iceberg, ast.NewTerm(c.Iceberg.astValue())))
	}
	return ast.NewObject(terms...)
}

func (ic *IcebergChange) astValue() ast.Value {
	terms := make([][2]*ast.Term, 0, 3)
	if len(ic.Operations) > 0 {
		terms = append(terms, ast.Item(inputTerms.operations, stringsTerm(ic.Operations, false)))
	}
	if len(ic.Updates) > 0 {
		terms = append(terms, ast.Item(inputTerms.updates, stringsTerm(ic.Updates, false)))
	}
	if len(ic.Branches) > 0 {
		terms = append(terms, ast.Item(inputTerms.branches, stringsTerm(ic.Branches, false)))
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
		ts[i] = stringTerm(s)
	}
	return ast.ArrayTerm(ts...)
}

// stringTerm shares one term for the strings every input repeats (field
// names, actions, ref and content types, Iceberg operations): each string
// term built per decision is two allocations, and evaluation never
// modifies input terms.
func stringTerm(s string) *ast.Term {
	if t, ok := sharedStrings[s]; ok {
		return t
	}
	return ast.StringTerm(s)
}

// inputTerms are the input's field names.
var inputTerms = struct {
	version, principal, action, api, ref, target, contents, requestID  *ast.Term
	id, groups, anonymous, name, typ, key, change, iceberg             *ast.Term
	operations, updates, branches                                      *ast.Term
	storage, provider, method, operation, bucket, table, tableLocation *ast.Term
}{
	version: ast.StringTerm("version"), principal: ast.StringTerm("principal"),
	action: ast.StringTerm("action"), api: ast.StringTerm("api"), ref: ast.StringTerm("ref"),
	target: ast.StringTerm("target"), contents: ast.StringTerm("contents"),
	requestID: ast.StringTerm("request_id"),
	id:        ast.StringTerm("id"), groups: ast.StringTerm("groups"), anonymous: ast.StringTerm("anonymous"),
	name: ast.StringTerm("name"), typ: ast.StringTerm("type"), key: ast.StringTerm("key"),
	change: ast.StringTerm("change"), iceberg: ast.StringTerm("iceberg"),
	operations: ast.StringTerm("operations"), updates: ast.StringTerm("updates"),
	branches: ast.StringTerm("branches"),
	storage:  ast.StringTerm("storage"), provider: ast.StringTerm("provider"),
	method: ast.StringTerm("method"), operation: ast.StringTerm("operation"),
	bucket: ast.StringTerm("bucket"), table: ast.StringTerm("table"),
	tableLocation: ast.StringTerm("table_location"),
}

// sharedStrings is read-only after package initialization.
var sharedStrings = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, s := range []string{
		"iceberg", "nessie", "main",
		RefBranch, RefTag, RefDetached,
		ChangeCreate, ChangeUpdate, ChangeDelete,
		TypeNamespace, TypeTable, TypeView,
		"append", "overwrite", "delete", "replace", "schema-change",
		"assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema",
		"add-spec", "set-default-spec", "add-sort-order", "set-default-sort-order",
		"add-snapshot", "set-snapshot-ref", "remove-snapshots", "remove-snapshot-ref",
		"set-location", "set-properties", "remove-properties", "set-statistics",
		"remove-statistics", "add-view-version", "set-current-view-version",
		"s3", "GET", "HEAD", "PUT", "POST",
		"get-object", "head-object", "list-objects", "put-object",
		"create-multipart-upload", "upload-part", "complete-multipart-upload",
	} {
		m[s] = ast.StringTerm(s)
	}
	for _, a := range []Action{
		ActionRead, ActionCreateRef, ActionAssignRef, ActionDeleteRef, ActionCommit,
		ActionMerge, ActionTransplant, ActionCreateNamespace, ActionDropNamespace,
		ActionWriteNamespace, ActionCreateTable, ActionDropTable, ActionWriteTable,
		ActionRenameTable, ActionCreateView, ActionDropView, ActionWriteView, ActionRenameView,
		ActionRetentionRef, ActionStorageRead, ActionStorageWrite,
	} {
		m[string(a)] = ast.StringTerm(string(a))
	}
	return m
}()
