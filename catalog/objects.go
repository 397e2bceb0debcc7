package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// Tables and views share the key space and most of what is done to them:
// the create's checks and commit, registration, rename and drop are
// written once here, for an objectKind. A table's commit is commit.go's,
// a view's views.go's.

// objectKind is what tables and views differ in where what is done to
// them is the same: the content type, the words of messages and the
// commit property naming them.
type objectKind struct {
	typ   versionstore.ContentType
	noun  string // "table" or "view"
	title string // "Table" or "View"
	// opSuffix makes the operation label of a verb: "drop", "drop-view".
	opSuffix string
	// prop is the commit property naming the table or view.
	prop   string
	noSuch func(Identifier) *Error
	// other is the other kind's title: "View" for tables, "Table" for
	// views.
	other string
}

var (
	tableKind = objectKind{typ: versionstore.IcebergTable, noun: "table", title: "Table", prop: icebergtable.PropTable,
		noSuch: noSuchTable, other: "View"}
	viewKind = objectKind{typ: versionstore.IcebergView, noun: "view", title: "View", opSuffix: "-view", prop: icebergtable.PropView,
		noSuch: noSuchView, other: "Table"}
)

// clash is the refusal of creating (or renaming) a table or view id onto
// an existing key holding existing, in the words Java's catalog tests
// expect.
func (k objectKind) clash(id Identifier, existing versionstore.ContentType) error {
	switch {
	case existing == versionstore.Namespace:
		return newError(AlreadyExists, "Cannot create %s %s: a namespace with the same name exists", k.noun, id)
	case existing != k.typ && (existing == versionstore.IcebergTable || existing == versionstore.IcebergView):
		return newError(AlreadyExists, "%s with same name already exists: %s", k.other, id)
	}
	return newError(AlreadyExists, "%s already exists: %s", k.title, id)
}

// op is the operation label of verb done to this kind.
func (k objectKind) op(verb string) string { return verb + k.opSuffix }

// lookupObject returns the content of a table or view at a commit, or a
// NoSuchTable or NoSuchView refusal if the key is absent or holds
// something else. A missing namespace is a missing table too, as the
// spec's clients expect.
func (s *Service) lookupObject(ctx context.Context, at versionstore.Hash, id Identifier, k objectKind) (*versionstore.Content, error) {
	c, err := s.lookup(ctx, at, id.Key())
	if err != nil {
		return nil, err
	}
	if c == nil || c.Type != k.typ {
		return nil, k.noSuch(id)
	}
	return c, nil
}

// loadObjectAt returns a table's or view's content and current metadata
// file (read by read) at a commit.
func loadObjectAt[F any](ctx context.Context, s *Service, at versionstore.Hash, id Identifier, k objectKind, read func(context.Context, string) (F, error)) (*versionstore.Content, F, error) {
	var file F
	c, err := s.lookupObject(ctx, at, id, k)
	if err != nil {
		return nil, file, err
	}
	if file, err = read(ctx, c.MetadataLocation); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The catalog names a file storage no longer has: Java's
			// catalogs answer NotFoundException in these words.
			return nil, file, newError(NoSuchFile, "Failed to open input stream for file: %s", c.MetadataLocation)
		}
		return nil, file, internalError(err)
	}
	return c, file, nil
}

// newObjectHead returns the head of branch for creating a table or view
// id on it: its namespace must exist and its key must be free.
func (s *Service) newObjectHead(ctx context.Context, branch string, id Identifier, k objectKind) (versionstore.Hash, error) {
	head, err := s.head(branch)
	if err != nil {
		return head, err
	}
	if _, err := s.requireNamespace(ctx, head, id.Namespace); err != nil {
		return head, err
	}
	if existing, err := s.lookup(ctx, head, id.Key()); err != nil {
		return head, err
	} else if existing != nil {
		return head, k.clash(id, existing.Type)
	}
	return head, nil
}

// placeNew checks a create (check) and gives the new table or view its
// warehouse (w's), its uuid and its location: the one its creator asked
// for, which must lie inside the warehouse, or the default.
func (s *Service) placeNew(w Write, check func() error, id Identifier, k objectKind, requested string) (*icebergtable.Warehouse, uuid.UUID, string, error) {
	if err := check(); err != nil {
		return nil, uuid.UUID{}, "", err
	}
	wh, err := s.warehouse(w)
	if err != nil {
		return nil, uuid.UUID{}, "", err
	}
	newUUID := uuid.New()
	if requested == "" {
		return wh, newUUID, wh.DefaultTableLocation(id.Namespace, id.Name, newUUID.String()), nil
	}
	loc, err := requireInside(wh, k.noun+" location", requested)
	return wh, newUUID, loc, err
}

// commitCreate commits the new table or view id at head (see
// newObjectHead), whose first metadata file is at fileLoc, and returns
// out, what it wrote. A failed commit deletes that file when it surely
// did not happen.
func (s *Service) commitCreate(ctx context.Context, w Write, head versionstore.Hash, id Identifier, k objectKind, fileLoc string, c *versionstore.Content, out *Written) (*Written, error) {
	err := s.commitWrite(ctx, w, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: id.Key(), Content: c}},
		commitDescription{op: k.op("create"), message: "iceberg: create " + k.noun + " " + id.String(),
			props: map[string]string{k.prop: id.String(), icebergtable.PropMetadataLocation: fileLoc}}, out)
	if err == nil {
		return out, nil
	}
	ce := ConflictOf(err)
	if ce == nil {
		return nil, s.commitNotDone(ctx, err, fileLoc)
	}
	s.removeFiles(ctx, fileLoc)
	if cf := FindConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
		return nil, noSuchNamespace(cf.Key)
	}
	return nil, k.clash(id, k.typ)
}

// TableCreate asks for a new table, as Iceberg's CreateTableRequest
// does.
type TableCreate struct {
	ID Identifier
	// Location is the table's location; "" is the warehouse's default
	// for it.
	Location string
	Schema   *iceberg.Schema
	// PartitionSpec and WriteOrder are bound to Schema; nil is
	// unpartitioned and unsorted.
	PartitionSpec *iceberg.PartitionSpec
	WriteOrder    *table.SortOrder
	Properties    map[string]string
	// Stage builds and checks the table's metadata but writes nothing:
	// the client commits the table later (CommitTables with
	// assert-create).
	Stage bool
	// Admit, if set, is asked about the new table's metadata before the
	// branch is read and anything written; its refusal is returned as is
	// (an API decides the storage credentials it vends there).
	Admit func(table.Metadata) error
}

// Check checks what the create asks before anything is read: the schema,
// the location and the properties. An API may run it before authorizing
// the request; CreateTable runs it too.
func (c *TableCreate) Check() error {
	if c.Schema == nil {
		return badRequest("cannot create table %s: the schema is missing", c.ID)
	}
	if err := ValidateCreateTable(c.Location, c.Properties[icebergtable.PropMetadataPath], c.Schema); err != nil {
		return err
	}
	return CheckCreateProperties(c.ID, c.Properties)
}

// CreateTable creates a table on w.Branch: its first metadata file
// written below the warehouse, and committed. Written.Table is that file,
// or, for a staged create, Written.StagedTable the metadata unwritten.
func (s *Service) CreateTable(ctx context.Context, w Write, req TableCreate) (*Written, error) {
	id := req.ID
	wh, tableUUID, loc, err := s.placeNew(w, req.Check, id, tableKind, req.Location)
	if err != nil {
		return nil, err
	}
	spec := iceberg.UnpartitionedSpec
	if req.PartitionSpec != nil {
		spec = req.PartitionSpec
	}
	order := table.UnsortedSortOrder
	if req.WriteOrder != nil {
		order = *req.WriteOrder
	}
	meta, err := table.NewMetadataWithUUID(req.Schema, spec, order, loc, WithSharedFileProperties(req.Properties), tableUUID)
	if err != nil {
		return nil, illegalArgument("cannot create table %s: %v", id, err)
	}
	if err := ValidateTableLayouts(nil, meta); err != nil {
		return nil, err
	}
	if p := icebergtable.PropertiesOf(meta)[icebergtable.PropMetadataPath]; p != "" {
		if _, err := requireInside(wh, icebergtable.PropMetadataPath, p); err != nil {
			return nil, err
		}
	}
	if req.Admit != nil {
		if err := req.Admit(meta); err != nil {
			return nil, err
		}
	}
	head, err := s.newObjectHead(ctx, w.Branch, id, tableKind)
	if err != nil {
		return nil, err
	}
	if req.Stage {
		return &Written{StagedTable: meta}, nil
	}
	file, err := s.writeNextTableMetadata(ctx, wh, meta, nil)
	if err != nil {
		return nil, err
	}
	return s.commitCreate(ctx, w, head, id, tableKind, file.Location, icebergtable.TableContent("", file), &Written{Table: file})
}

// ViewCreate asks for a new view, as Iceberg's CreateViewRequest does.
type ViewCreate struct {
	ID Identifier
	// Location is the view's location; "" is the warehouse's default
	// for it.
	Location   string
	Schema     *iceberg.Schema
	Version    *view.Version
	Properties map[string]string
}

// Check checks what the create asks before anything is read. An API may
// run it before authorizing the request; CreateView runs it too.
func (c *ViewCreate) Check() error {
	if c.Schema == nil || c.Version == nil {
		return badRequest("cannot create view %s: schema and view-version are required", c.ID)
	}
	return ValidateCreateView(c.Location, c.Schema)
}

// CreateView creates a view on w.Branch: its first metadata file written
// below the warehouse, and committed. Written.View is that file.
func (s *Service) CreateView(ctx context.Context, w Write, req ViewCreate) (*Written, error) {
	id := req.ID
	wh, viewUUID, loc, err := s.placeNew(w, req.Check, id, viewKind, req.Location)
	if err != nil {
		return nil, err
	}
	meta, err := view.NewMetadataWithUUID(req.Version, req.Schema, loc, req.Properties, viewUUID)
	if err != nil {
		return nil, illegalArgument("cannot create view %s: %v", id, err)
	}
	head, err := s.newObjectHead(ctx, w.Branch, id, viewKind)
	if err != nil {
		return nil, err
	}
	file, err := s.writeNextViewMetadata(ctx, wh, meta, "")
	if err != nil {
		return nil, err
	}
	return s.commitCreate(ctx, w, head, id, viewKind, file.Location, icebergtable.ViewContent("", file), &Written{View: file})
}

// registration is a metadata file registered as a table or view.
type registration struct {
	location string // of the metadata file
	// objectLocation is the table's or view's location the file names.
	objectLocation string
	content        func(contentID string) *versionstore.Content
	// fill puts the file into what the registration wrote.
	fill func(*Written)
}

// RegisterTable registers the table metadata file at metadataLocation as
// table id on w.Branch. With overwrite, an existing table is replaced and
// keeps its content id. admit, if set, is asked about the file before
// the branch is read; its refusal, as a read's, refuses the registration
// as Invalid. Written.Table is the file, TableBody its metadata as
// answered: the file is kept as it is (its location is the client's),
// whatever its gc.enabled says, and is served with the shared-file
// properties (icebergtable.MetadataFile.ServedJSON) until the next
// commit writes them.
func (s *Service) RegisterTable(ctx context.Context, w Write, id Identifier, metadataLocation string, overwrite bool, admit func(*icebergtable.MetadataFile) error) (*Written, error) {
	return s.register(ctx, w, tableKind, id, metadataLocation, overwrite, func(ctx context.Context, loc string) (registration, error) {
		file, err := s.readTableMetadata(ctx, loc)
		if err != nil {
			return registration{}, err
		}
		body, err := file.ServedJSON()
		if err != nil {
			return registration{}, internalError(err)
		}
		if admit != nil {
			if err := admit(file); err != nil {
				return registration{}, err
			}
		}
		return registration{
			location:       file.Location,
			objectLocation: file.Metadata.Location(),
			content:        func(contentID string) *versionstore.Content { return icebergtable.TableContent(contentID, file) },
			fill:           func(out *Written) { out.Table, out.TableBody = file, body },
		}, nil
	})
}

// RegisterView registers the view metadata file at metadataLocation as
// view id on w.Branch. Written.View is the file.
func (s *Service) RegisterView(ctx context.Context, w Write, id Identifier, metadataLocation string) (*Written, error) {
	return s.register(ctx, w, viewKind, id, metadataLocation, false, func(ctx context.Context, loc string) (registration, error) {
		file, err := s.readViewMetadata(ctx, loc)
		if err != nil {
			return registration{}, err
		}
		return registration{
			location:       file.Location,
			objectLocation: file.Metadata.Location(),
			content:        func(contentID string) *versionstore.Content { return icebergtable.ViewContent(contentID, file) },
			fill:           func(out *Written) { out.View = file },
		}, nil
	})
}

// register registers the metadata file at metaLoc, read by open, as the
// table or view id. With overwrite (tables only), an existing table is
// replaced and keeps its content id.
func (s *Service) register(ctx context.Context, w Write, k objectKind, id Identifier, metaLoc string, overwrite bool,
	open func(context.Context, string) (registration, error)) (*Written, error) {
	wh, err := s.warehouse(w)
	if err != nil {
		return nil, err
	}
	metaLoc, err = requireInside(wh, "metadata-location", metaLoc)
	if err != nil {
		return nil, err
	}
	reg, err := open(ctx, metaLoc)
	if err != nil {
		return nil, badRequest("cannot register %s %s: %v", k.noun, id, err)
	}
	if _, err := requireInside(wh, k.noun+" location", reg.objectLocation); err != nil {
		return nil, err
	}
	out := &Written{}
	reg.fill(out)
	op := k.op("register")
	err = s.retry(ctx, w, op, func() (bool, error) {
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		if _, err := s.requireNamespace(ctx, head, id.Namespace); err != nil {
			return false, err
		}
		existing, err := s.lookup(ctx, head, id.Key())
		if err != nil {
			return false, err
		}
		contentID := ""
		if existing != nil {
			if existing.Type != k.typ || !overwrite {
				return false, k.clash(id, existing.Type)
			}
			contentID = existing.ID
		}
		err = s.commitWrite(ctx, w, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.Key(), Content: reg.content(contentID)}},
			commitDescription{op: op, message: "iceberg: register " + k.noun + " " + id.String(),
				props: map[string]string{k.prop: id.String(), icebergtable.PropMetadataLocation: reg.location}}, out)
		ce := ConflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case FindConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(id.Namespace)
		case existing == nil:
			return false, k.clash(id, k.typ)
		}
		return true, commitFailed("%s %s changed concurrently: %v", k.title, id, ce)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RenameTable renames table src to dst on w.Branch.
func (s *Service) RenameTable(ctx context.Context, w Write, src, dst Identifier) (*Written, error) {
	return s.rename(ctx, w, tableKind, src, dst)
}

// RenameView renames view src to dst on w.Branch.
func (s *Service) RenameView(ctx context.Context, w Write, src, dst Identifier) (*Written, error) {
	return s.rename(ctx, w, viewKind, src, dst)
}

// rename renames a table or view in one atomic commit: delete the old
// key, put the new one with the same content id, so the table or view
// keeps its identity (and history) across the rename.
func (s *Service) rename(ctx context.Context, w Write, k objectKind, src, dst Identifier) (*Written, error) {
	if slices.Equal(src.Key(), dst.Key()) {
		return nil, k.clash(dst, k.typ)
	}
	op := k.op("rename")
	out := &Written{}
	err := s.retry(ctx, w, op, func() (bool, error) {
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		cur, err := s.lookupObject(ctx, head, src, k)
		if err != nil {
			return false, err
		}
		if _, err := s.requireNamespace(ctx, head, dst.Namespace); err != nil {
			return false, err
		}
		if existing, err := s.lookup(ctx, head, dst.Key()); err != nil {
			return false, err
		} else if existing != nil {
			// Java's wording for a rename onto a view, and of a view onto
			// a table; a table onto a table keeps "Table already exists".
			switch {
			case existing.Type == versionstore.IcebergView:
				return false, newError(AlreadyExists, "Cannot rename %s to %s. View already exists", src, dst)
			case existing.Type == versionstore.IcebergTable && k.typ == versionstore.IcebergView:
				return false, newError(AlreadyExists, "Cannot rename %s to %s. Table already exists", src, dst)
			}
			return false, k.clash(dst, existing.Type)
		}
		err = s.commitWrite(ctx, w, head, []versionstore.Operation{
			{Kind: versionstore.OpDelete, Key: src.Key()},
			{Kind: versionstore.OpPut, Key: dst.Key(), Content: cur},
		}, commitDescription{op: op, message: fmt.Sprintf("iceberg: rename %s %s to %s", k.noun, src, dst),
			props: map[string]string{icebergtable.PropRenamedFrom: src.String(), k.prop: dst.String()}}, out)
		ce := ConflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case FindConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(dst.Namespace)
		}
		for _, cf := range ce.Conflicts {
			if slices.Equal(cf.Key, dst.Key()) {
				return false, k.clash(dst, versionstore.IcebergTable)
			}
		}
		return true, commitFailed("Cannot rename %s %s: it changed concurrently: %v", k.noun, src, ce)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropTable drops table id from w.Branch. Its metadata file is read, as a
// load would: a table whose metadata cannot be read is not dropped. No
// file is deleted: other branches, tags and older commits may still
// reference the table's files, so purge is recorded in the commit but not
// acted on. Written.Content is the content removed, Written.Table its
// metadata file.
func (s *Service) DropTable(ctx context.Context, w Write, id Identifier, purge bool) (*Written, error) {
	desc := commitDescription{op: "drop", message: "iceberg: drop table " + id.String(), props: map[string]string{icebergtable.PropTable: id.String()}}
	if purge {
		desc.message += " (purge requested; no files deleted)"
		desc.props[icebergtable.PropPurgeRequested] = "true"
	}
	return s.remove(ctx, w, tableKind, id, desc, func(ctx context.Context, c *versionstore.Content, out *Written) error {
		file, err := s.readTableMetadata(ctx, c.MetadataLocation)
		if err != nil {
			return internalError(err)
		}
		out.Table = file
		return nil
	})
}

// UnregisterTable removes table id from w.Branch, as DropTable without a
// purge does; Written.TableBody is its metadata as answered.
func (s *Service) UnregisterTable(ctx context.Context, w Write, id Identifier) (*Written, error) {
	desc := commitDescription{op: "unregister", message: "iceberg: unregister table " + id.String(), props: map[string]string{icebergtable.PropTable: id.String()}}
	return s.remove(ctx, w, tableKind, id, desc, func(ctx context.Context, c *versionstore.Content, out *Written) error {
		file, err := s.readTableMetadata(ctx, c.MetadataLocation)
		if err != nil {
			return internalError(err)
		}
		body, err := file.ServedJSON()
		if err != nil {
			return internalError(err)
		}
		out.Table, out.TableBody = file, body
		return nil
	})
}

// DropView drops view id from w.Branch; no file is deleted.
func (s *Service) DropView(ctx context.Context, w Write, id Identifier) (*Written, error) {
	desc := commitDescription{op: "drop-view", message: "iceberg: drop view " + id.String(), props: map[string]string{icebergtable.PropView: id.String()}}
	return s.remove(ctx, w, viewKind, id, desc, func(context.Context, *versionstore.Content, *Written) error { return nil })
}

// remove deletes a table's or view's key from the branch in one commit
// (drop, unregister) that desc describes, retried when another writer
// changed the branch in between. read reads what the answer needs of the
// content removed, before the commit. No file is ever deleted.
func (s *Service) remove(ctx context.Context, w Write, k objectKind, id Identifier, desc commitDescription,
	read func(context.Context, *versionstore.Content, *Written) error) (*Written, error) {
	var out *Written
	err := s.retry(ctx, w, desc.op, func() (bool, error) {
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		out = &Written{}
		if out.Content, err = s.lookupObject(ctx, head, id, k); err != nil {
			return false, err
		}
		if err := read(ctx, out.Content, out); err != nil {
			return false, err
		}
		desc.props[icebergtable.PropMetadataLocation] = out.Content.MetadataLocation
		err = s.commitWrite(ctx, w, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: id.Key()}}, desc, out)
		ce := ConflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case FindConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, k.noSuch(id)
		}
		return true, commitFailed("%s %s changed concurrently: %v", k.title, id, ce)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Lookup returns the content at key at a commit, or nil when absent.
func (s *Service) Lookup(ctx context.Context, at versionstore.Hash, key versionstore.ContentKey) (*versionstore.Content, error) {
	return s.lookup(ctx, at, key)
}

// RequireNamespace returns namespace ns at a commit, or a NoSuchNamespace
// refusal.
func (s *Service) RequireNamespace(ctx context.Context, at versionstore.Hash, ns []string) (*versionstore.Content, error) {
	return s.requireNamespace(ctx, at, ns)
}

// LookupObject returns the content of table or view id (typ says which)
// at a commit, or a NoSuchTable or NoSuchView refusal if the key is absent
// or holds something else.
func (s *Service) LookupObject(ctx context.Context, at versionstore.Hash, id Identifier, typ versionstore.ContentType) (*versionstore.Content, error) {
	k := tableKind
	if typ == versionstore.IcebergView {
		k = viewKind
	}
	return s.lookupObject(ctx, at, id, k)
}

// LoadTable returns table id's content and current metadata file at a
// commit, for a client's load: a cached file is confirmed to still exist
// (icebergtable.Warehouse.LoadTableMetadata). A file storage no longer
// has is a NoSuchFile refusal.
func (s *Service) LoadTable(ctx context.Context, at versionstore.Hash, id Identifier) (*versionstore.Content, *icebergtable.MetadataFile, error) {
	return loadObjectAt(ctx, s, at, id, tableKind, func(ctx context.Context, loc string) (*icebergtable.MetadataFile, error) {
		return s.filesAt(loc).LoadTableMetadata(ctx, loc)
	})
}

// LoadView returns view id's content and metadata file at a commit.
func (s *Service) LoadView(ctx context.Context, at versionstore.Hash, id Identifier) (*versionstore.Content, *icebergtable.ViewMetadataFile, error) {
	return loadObjectAt(ctx, s, at, id, viewKind, s.readViewMetadata)
}
