package policy

// Input is the document every authorization decision is asked about: one
// per operation, whatever API it came through. Its JSON form is what Rego
// sees as `input`; the field names are the contract with bundle authors,
// documented in policy/README.md, so they change only with a new
// InputVersion.
type Input struct {
	// Version is InputVersion, so a bundle can refuse inputs it was not
	// written for.
	Version int `json:"version"`
	// Principal is who asks.
	Principal Principal `json:"principal"`
	// Action is what they ask to do: one of the Action constants.
	Action Action `json:"action"`
	// API names the entry point: "iceberg", "nessie" or "floe" (floe's
	// own API, whose actions are named admin.*). The CLI speaks the
	// Nessie API for refs and history, so those operations arrive as
	// "nessie".
	API string `json:"api"`
	// Ref is the reference read or written: the branch a commit lands on,
	// the ref created, assigned or deleted, or the source of a merge or
	// transplant. Its name is "" for detached reads (a bare @hash).
	Ref Ref `json:"ref"`
	// Target is the branch a merge or transplant writes to; nil otherwise.
	Target *Ref `json:"target,omitempty"`
	// Contents lists each catalog entry the operation writes and how. For
	// a merge or transplant it lists every key the operation would change
	// on the target, computed before anything is written.
	Contents []Content `json:"contents,omitempty"`
	// Storage is the object-store request an engine asks floe to sign
	// (actions storage.read and storage.write); nil otherwise.
	Storage *StorageRequest `json:"storage,omitempty"`
	// RequestID ties the decision to the request log.
	RequestID string `json:"request_id,omitempty"`
}

// StorageRequest is one object-store request an engine asks floe to sign
// for a table. floe has already checked what no policy may loosen: the
// bucket is the warehouse's, the key lies under one of the table's
// locations, and the operation is not a deletion; the policy decides the
// rest (who may read or write which table's files on which ref).
type StorageRequest struct {
	// Provider is the object store: "s3".
	Provider string `json:"provider"`
	// Method is the HTTP method of the request: GET, HEAD, PUT or POST.
	Method string `json:"method"`
	// Operation names the request the way the object store does:
	// get-object, head-object, list-objects, put-object,
	// create-multipart-upload, upload-part, complete-multipart-upload.
	Operation string `json:"operation"`
	// Bucket and Key locate the object; for list-objects Key is the
	// listed prefix.
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// Table is the table's key (namespace elements, then name) whose
	// files are asked for.
	Table []string `json:"table"`
	// TableLocation is the table's location, e.g.
	// s3://bucket/wh/sales/orders-<uuid>.
	TableLocation string `json:"table_location"`
}

// InputVersion is the version of Input's shape.
const InputVersion = 1

// Principal is an authenticated caller.
type Principal struct {
	// ID is the stable identifier: a token file's principal, a JWT's
	// subject claim, or an OAuth client's principal.
	ID string `json:"id"`
	// Groups the principal belongs to.
	Groups []string `json:"groups"`
	// Anonymous is true only in dev mode without a token.
	Anonymous bool `json:"anonymous"`
}

// Ref names a reference.
type Ref struct {
	Name string `json:"name"`
	// Type is "branch", "tag" or "detached".
	Type string `json:"type"`
}

// Ref types.
const (
	RefBranch   = "branch"
	RefTag      = "tag"
	RefDetached = "detached"
)

// Action is the kind of operation asked about.
type Action string

// The actions. Reads are one action whatever they read; writes say what
// they create, change or drop, and Contents says which entries.
const (
	ActionRead       Action = "read"
	ActionCreateRef  Action = "ref.create"
	ActionAssignRef  Action = "ref.assign"
	ActionDeleteRef  Action = "ref.delete"
	ActionCommit     Action = "commit" // a Nessie commit: any mix of puts and deletes
	ActionMerge      Action = "merge"
	ActionTransplant Action = "transplant"

	ActionCreateNamespace Action = "namespace.create"
	ActionDropNamespace   Action = "namespace.drop"
	ActionWriteNamespace  Action = "namespace.write" // properties

	ActionCreateTable Action = "table.create" // also register
	ActionDropTable   Action = "table.drop"
	ActionWriteTable  Action = "table.write" // updateTable, transactions/commit
	ActionRenameTable Action = "table.rename"

	ActionCreateView Action = "view.create"
	ActionDropView   Action = "view.drop"
	ActionWriteView  Action = "view.write"
	ActionRenameView Action = "view.rename"
)

// ActionEventsRead reads the change feed's events about the catalog as a
// whole, which are on no reference (garbage collection runs, policy
// bundle activations): floe's events endpoint and event webhooks ask it
// for those, as they ask ActionRead of an event's reference for the
// others. Named admin.*, it is an admin operation for the default policy.
const ActionEventsRead Action = "admin.events.read"

// Storage actions: an engine asks floe to sign an object-store request for
// a table's file (Input.Storage). storage.read is a GET, HEAD or listing;
// storage.write a PUT or a multipart upload step. Deletions are never
// asked about: floe refuses them before any policy is consulted.
const (
	ActionStorageRead  Action = "storage.read"
	ActionStorageWrite Action = "storage.write"
)

// ActionRetentionRef changes a reference's retention settings (floe's
// API, see refretention): a ref management write on that ref, which the
// default policy decides as it decides ref.assign.
const ActionRetentionRef Action = "ref.retention"

// Content is one catalog entry an operation writes.
type Content struct {
	// Key is the entry's namespace elements followed by its name.
	Key []string `json:"key"`
	// Type is "NAMESPACE", "ICEBERG_TABLE", "ICEBERG_VIEW", or "" when the
	// entry is deleted and its type was not looked up.
	Type string `json:"type,omitempty"`
	// Change is "create", "update" or "delete".
	Change string `json:"change"`
	// Iceberg details the Iceberg-level change of a table or view, when
	// the request carried Iceberg metadata updates.
	Iceberg *IcebergChange `json:"iceberg,omitempty"`
}

// Content changes.
const (
	ChangeCreate = "create"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
)

// Content types, as the Nessie API spells them.
const (
	TypeNamespace = "NAMESPACE"
	TypeTable     = "ICEBERG_TABLE"
	TypeView      = "ICEBERG_VIEW"
)

// IcebergChange describes an Iceberg metadata change.
type IcebergChange struct {
	// Operations are the snapshot operations added (append, overwrite,
	// delete, replace), plus "schema-change" when the schema, partition
	// spec or sort order changes.
	Operations []string `json:"operations,omitempty"`
	// Updates are the metadata update actions in the request, in order
	// and without repeats (add-snapshot, set-snapshot-ref, ...).
	Updates []string `json:"updates,omitempty"`
	// Branches are the table-level snapshot refs the request sets.
	Branches []string `json:"branches,omitempty"`
}

// Decision is the engine's answer.
type Decision struct {
	// ID identifies the decision in the decision log.
	ID string `json:"decision_id"`
	// Allow says whether the operation may proceed.
	Allow bool `json:"allow"`
	// Reasons explain the answer, for the client and the log; a denial
	// always has at least one.
	Reasons []string `json:"reasons"`
}
