package backend

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
)

// ObjectID is the SHA-256 of an object's canonical encoding.
type ObjectID [32]byte

// String returns the lowercase hex form used everywhere ids are shown.
func (id ObjectID) String() string { return hex.EncodeToString(id[:]) }

// Errors callers branch on. Implementations wrap them with context.
var (
	// ErrObjectNotFound reports a missing object.
	ErrObjectNotFound = errors.New("object not found")
	// ErrRefNotFound reports a missing reference.
	ErrRefNotFound = errors.New("reference not found")
	// ErrRefConflict reports that a reference did not hold its expected
	// value when a batch was applied; nothing of that batch was written.
	ErrRefConflict = errors.New("reference changed concurrently")
	// ErrClosed reports use of a closed backend.
	ErrClosed = errors.New("backend closed")
	// ErrUnavailable reports that the storage could not be reached (a
	// database down or restarting, its connections refused or broken):
	// the operation may succeed if tried again later. An Apply failing
	// with it wrote nothing, unless the error also says its outcome is
	// unknown.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrOutcomeUnknown reports an Apply whose batch may or may not have
	// been written: it reached the storage, but the answer was lost (a
	// connection broke) or the write could not be confirmed durable (a
	// failed fsync). It wraps ErrUnavailable; a caller must read back
	// before telling anyone the write did not happen.
	ErrOutcomeUnknown = fmt.Errorf("outcome of the commit is unknown: %w", ErrUnavailable)
	// ErrRecordNotFound reports a missing record.
	ErrRecordNotFound = errors.New("record not found")
	// ErrRecordConflict reports that a record did not hold the value a
	// RecordCheck expected when a batch was applied; nothing of that batch
	// was written. Apply returns it inside a *RecordConflictError.
	ErrRecordConflict = errors.New("record changed concurrently")
)

// RecordConflictError names the record whose check failed, so that a caller
// batching several independent writers can tell which of them to fail.
type RecordConflictError struct {
	Key string
}

func (e *RecordConflictError) Error() string {
	return fmt.Sprintf("record %q does not hold the expected value: %s", e.Key, ErrRecordConflict)
}

func (e *RecordConflictError) Unwrap() error { return ErrRecordConflict }

// Object is one immutable object. Its ID must be the SHA-256 of Data; the
// backend does not re-hash, callers guarantee it.
type Object struct {
	ID   ObjectID
	Data []byte
}

// RefUpdate is one compare-and-swap of a named reference. Expected nil means
// the reference must not exist; New nil deletes it. Values are opaque bytes
// compared for equality.
type RefUpdate struct {
	Name     string
	Expected []byte
	New      []byte
	// Hint, with New, is kept beside the new value for the next LockRef
	// of the ref to return (LockedRef.Hint): what the next writer will
	// read, sent along with the lock instead of fetched after it. It is
	// never compared nor listed, replaced (or cleared) by every update,
	// and a backend without RefLocker ignores it.
	Hint []byte
}

// Ref is a stored reference: its name and opaque value.
type Ref struct {
	Name  string
	Value []byte
}

// LogRecord is one entry of the reference log, with the sequence number the
// backend assigned when it was appended. Sequence numbers increase strictly
// in append order and are never reused.
type LogRecord struct {
	Seq   uint64
	Value []byte
}

// Record is a small mutable value beside the history, such as the saved
// response of an idempotent request. Writing it in the same batch as a ref
// move is what lets a caller find out, after a crash, whether its write
// happened.
type Record struct {
	Key   string
	Value []byte
}

// RecordCheck makes a batch conditional on one record, as a RefUpdate's
// Expected does for a reference: the batch is written only if, when it is
// applied, the record holds exactly Expected (nil: the record must not
// exist; an empty non-nil slice: it must exist with an empty value).
// Together with a write of the same key in the batch's Records (or
// DeleteRecords) it is a compare-and-swap; with a ref update, it ties the
// record's state to the ref move.
//
// Checks see the stored state before the batch, never the batch's own
// writes, and a batch may check a key at most once. The comparison and the
// write are atomic with respect to every other batch that checks or writes
// the same key, including unconditional writes.
type RecordCheck struct {
	Key      string
	Expected []byte
}

// Batch is everything one atomic write changes. Either all of it becomes
// durable, or none of it does.
type Batch struct {
	// Objects are stored if absent; storing an existing id is a no-op.
	Objects []Object
	// Refs are applied only if every Expected value matches.
	Refs []RefUpdate
	// Log values are appended to the reference log in order.
	Log [][]byte
	// RecordChecks are preconditions on records; see RecordCheck.
	RecordChecks []RecordCheck
	// Records are stored, replacing any record with the same key. A record
	// has no expiry at this level: expiring records is the caller's policy.
	Records []Record
	// DeleteRecords removes records; a missing key is not an error.
	DeleteRecords []string
	// Deferred lets Apply return before the batch is durable: a crash may
	// lose it, whole, but never once a batch that is not deferred, applied
	// after it, has returned (that batch's flush makes every batch before
	// it durable, as a write-ahead log does). Its log records are not shown
	// by ReadLog or ScanLog before they are durable. A backend may make it
	// durable anyway (pgbackend does). It is for writes nothing durable
	// names until a later, durable batch does, such as the merge queue's
	// candidate branches (versionstore.Options.ScratchRefPrefixes).
	Deferred bool
}

// Backend is durable storage for the version store. All methods are safe for
// concurrent use. Apply must not return until the batch is durable (synced),
// unless the backend was explicitly opened without durability for tests.
type Backend interface {
	// GetObject returns the object's bytes; the caller may retain them.
	GetObject(ctx context.Context, id ObjectID) ([]byte, error)
	// HasObject reports whether the object exists.
	HasObject(ctx context.Context, id ObjectID) (bool, error)
	// ObjectsWithPrefix lists up to limit object ids starting with prefix,
	// in ascending order; used to resolve abbreviated hashes.
	ObjectsWithPrefix(ctx context.Context, prefix []byte, limit int) ([]ObjectID, error)

	// GetRef returns the reference's current value.
	GetRef(ctx context.Context, name string) ([]byte, error)
	// ListRefs returns every reference, ordered by name.
	ListRefs(ctx context.Context) ([]Ref, error)

	// ReadLog returns up to limit log records with Seq < before, newest
	// first. before == 0 means from the newest record.
	ReadLog(ctx context.Context, before uint64, limit int) ([]LogRecord, error)

	// GetRecord returns a record's value.
	GetRecord(ctx context.Context, key string) ([]byte, error)
	// ScanRecords returns up to limit records with keys > after, in key
	// order.
	ScanRecords(ctx context.Context, after string, limit int) ([]Record, error)

	// Apply writes the batch atomically and durably. If any RefUpdate's
	// Expected value does not match, it returns an error wrapping
	// ErrRefConflict and writes nothing; if any RecordCheck fails, an error
	// wrapping a *RecordConflictError (and so ErrRecordConflict), and
	// writes nothing.
	Apply(ctx context.Context, b Batch) error

	// Close releases the backend. Pending Apply calls finish first.
	Close() error
}

// LogScanner is implemented by a backend that reads its reference log
// forwards. The change feed (package changefeed) follows the log from a
// consumer's cursor with it; without it the store pages ReadLog backwards
// from the newest record, which costs what lies beyond the cursor.
//
// ScanLog returns up to limit records with Seq > after, oldest first. It
// shows exactly the records ReadLog shows: durable ones only, and a record
// only once every record with a smaller Seq is visible too, so a reader
// that saw Seq n never sees a record below n appear later.
type LogScanner interface {
	ScanLog(ctx context.Context, after uint64, limit int) ([]LogRecord, error)
}

// Writability is implemented by a backend that can tell, without writing,
// that its storage does not take writes now: a full disk or an unwritable
// directory, say. The version store reports it in its readiness check.
type Writability interface {
	// Writable returns nil while writes can be made durable, and
	// otherwise an error wrapping ErrUnavailable that says why.
	Writable() error
}

// Shared is implemented by a backend that other processes may write at the
// same time, such as a SQL database behind several floe replicas. The
// version store then treats its in-memory mirror of the references as a
// hint only: it reads a reference's head from the backend whenever it
// resolves one, and rebases a group-commit round whose compare-and-swap
// another process won. A backend owned by one process (Pebble) does not
// implement it, or returns false.
type Shared interface {
	Shared() bool
}

// ObjectsGetter is implemented by a backend that reads many objects in one
// round trip. A store on a shared backend uses it to read, level by level,
// the tree nodes another replica wrote, rather than one node at a time.
type ObjectsGetter interface {
	// GetObjects returns the objects' bytes in the order of ids, nil for
	// an object that does not exist.
	GetObjects(ctx context.Context, ids []ObjectID) ([][]byte, error)
}

// RefLocker is implemented by a shared backend that can hold one reference
// against every other writer, in any process, while the caller computes the
// batch that moves it. The version store uses it after losing a
// compare-and-swap to another replica: optimistic first, then a turn in the
// database's queue for the row, so a round cannot lose to the same busy
// replicas over and over.
type RefLocker interface {
	LockRef(ctx context.Context, name string) (LockedRef, error)
}

// LockedRef is a reference held by LockRef. Until Apply or Release, no
// other batch can change it; a missing reference is not held (a concurrent
// create is then refused by Apply's compare-and-swap as usual).
type LockedRef interface {
	// Value is the reference's value when it was locked; nil if absent.
	Value() []byte
	// Hint is the RefUpdate.Hint stored with Value, if any.
	Hint() []byte
	// RecentLog is the newest log records when the lock was granted,
	// newest first, read in the same round trip: enough for the caller to
	// follow the other writers' moves of the reference without reading
	// their commits. It may be empty, or stop short of what the caller
	// last saw.
	RecentLog() []LogRecord
	// Apply writes the batch as Backend.Apply does, and releases the lock.
	Apply(ctx context.Context, b Batch) error
	// Release gives the lock up without writing anything.
	Release()
}
