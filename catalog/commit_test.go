package catalog

import (
	"errors"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floe-catalog/floe/versionstore"
)

// newTestService is a catalog over a Pebble store and a file://
// warehouse "lake" in t's temporary directory, with namespace ns on main.
func newTestService(t *testing.T) *Service {
	t.Helper()
	store := openStore(t)
	dir := t.TempDir()
	wh := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "warehouse"))}).String()
	s, err := New(store, Config{Warehouses: []Warehouse{{Name: "lake", Location: wh}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.head(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Commit(t.Context(), versionstore.CommitRequest{
		Branch: versionstore.DefaultBranch, Expected: head, Meta: versionstore.CommitMeta{Message: "ns"},
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}},
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// createChange creates table ns.name by commit, as a staged create's
// commit does.
func createChange(name string) TableChange {
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	return TableChange{
		ID:           Identifier{Namespace: []string{"ns"}, Name: name},
		Requirements: table.Requirements{table.AssertCreate()},
		Updates: table.Updates{
			table.NewAssignUUIDUpdate(uuid.New()), table.NewUpgradeFormatVersionUpdate(2),
			table.NewAddSchemaUpdate(schema), table.NewSetCurrentSchemaUpdate(-1),
			table.NewAddPartitionSpecUpdate(iceberg.UnpartitionedSpec, true), table.NewSetDefaultSpecUpdate(-1),
			table.NewAddSortOrderUpdate(&table.UnsortedSortOrder), table.NewSetDefaultSortOrderUpdate(-1),
		},
	}
}

func commitOne(t *testing.T, s *Service, tc TableChange) (*TablesCommitted, error) {
	t.Helper()
	return s.CommitTables(t.Context(), TablesCommit{Warehouse: "lake", Branch: versionstore.DefaultBranch, Changes: []TableChange{tc}, Committer: "test"})
}

// TestCommitTables drives a table commit below the APIs: a create, a
// property update, a no-op, and the refusals an API maps onto its error
// model, each of its Kind.
func TestCommitTables(t *testing.T) {
	s := newTestService(t)
	created, err := commitOne(t, s, createChange("t"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Commit == nil || created.Op != "create" || len(created.Staged) != 1 || !created.Staged[0].Changed() {
		t.Fatalf("create: %+v", created)
	}
	id := Identifier{Namespace: []string{"ns"}, Name: "t"}
	c, err := s.store.GetContent(t.Context(), created.Commit.Commit.Hash, id.Key())
	if err != nil || c.MetadataLocation != created.Staged[0].File.Location {
		t.Fatalf("stored content %+v (%v), want metadata %s", c, err, created.Staged[0].File.Location)
	}

	set := TableChange{ID: id, Updates: table.Updates{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}}
	updated, err := commitOne(t, s, set)
	if err != nil || updated.Commit == nil || updated.Staged[0].File.Metadata.Properties()["k"] != "v" {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	again, err := commitOne(t, s, TableChange{ID: id, Requirements: table.Requirements{table.AssertCurrentSchemaID(0)}})
	if err != nil || again.Commit != nil || again.Staged[0].Changed() || again.Staged[0].File.Location != updated.Staged[0].File.Location {
		t.Fatalf("a no-op commit: %+v, %v", again, err)
	}

	stale := TableChange{ID: id, Requirements: table.Requirements{table.AssertCurrentSchemaID(7)}}
	for name, tc := range map[string]struct {
		change TableChange
		kind   Kind
		msg    string
	}{
		"exists":          {createChange("t"), CommitFailed, "Requirement failed: table already exists: ns.t"},
		"no table":        {TableChange{ID: Identifier{Namespace: []string{"ns"}, Name: "nope"}}, NoSuchTable, "Table does not exist: ns.nope"},
		"no namespace":    {TableChange{ID: Identifier{Namespace: []string{"other"}, Name: "t"}, Requirements: createChange("t").Requirements, Updates: createChange("t").Updates}, NoSuchNamespace, "Namespace does not exist: other"},
		"requirement":     {stale, CommitFailed, "Requirement failed: current schema changed: expected id 7 != 0"},
		"shared files on": {TableChange{ID: id, Updates: table.Updates{table.NewSetPropertiesUpdate(iceberg.Properties{"gc.enabled": "true"})}}, Invalid, ""},
	} {
		_, err := commitOne(t, s, tc.change)
		ce, ok := errors.AsType[*Error](err)
		if !ok || ce.Kind != tc.kind || (tc.msg != "" && ce.Msg != tc.msg) {
			t.Errorf("%s: %v, want a %v refusal %q", name, err, tc.kind, tc.msg)
		}
	}
}

// TestConcurrentCommitsTakeTurns: writers of one table in one process
// take the table's lock in turn, so the store refuses none of them and no
// lock is left behind.
func TestConcurrentCommitsTakeTurns(t *testing.T) {
	s := newTestService(t)
	if _, err := commitOne(t, s, createChange("t")); err != nil {
		t.Fatal(err)
	}
	id := Identifier{Namespace: []string{"ns"}, Name: "t"}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		conflicts int
	)
	for w := range 8 {
		wg.Go(func() {
			tc := TableChange{ID: id, Updates: table.Updates{table.NewSetPropertiesUpdate(iceberg.Properties{"writer": string(rune('a' + w))})}}
			_, err := s.CommitTables(t.Context(), TablesCommit{Warehouse: "lake", Branch: versionstore.DefaultBranch, Changes: []TableChange{tc},
				Observer: countConflicts{&mu, &conflicts}})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if conflicts != 0 {
		t.Errorf("the store refused %d commits of writers in one process", conflicts)
	}
	if n := s.tables.Len(); n != 0 {
		t.Errorf("%d keys left in the table lock map", n)
	}
}

type countConflicts struct {
	mu *sync.Mutex
	n  *int
}

func (c countConflicts) Retried(string)         {}
func (c countConflicts) Committed(string, bool) {}
func (c countConflicts) Refused(string)         {}
func (c countConflicts) Conflicted(string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.n++
}
