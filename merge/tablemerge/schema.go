package tablemerge

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrStructure: the source's structure cannot be carried onto the
// target's table as it is (the target holds another schema, partition
// spec or sort order under an id the source uses).
var ErrStructure = errors.New("cannot carry the source's table structure")

// CarryStructure adds to b, a builder of the target's table head, what
// the source's table src changed of the table's structure since base:
// every schema, partition spec and sort order of src that head lacks
// (all of them, not only the current ones: the source's snapshots name
// the schema they were written with and its manifests the spec), then
// src's current schema, default spec and default sort order as head's
// current ones where src changed them since base. Each keeps the id src
// gave it, so the source's snapshots and manifests name them right on
// the target; every data file keeps its spec and is read through field
// ids. last-column-id and last-partition-id follow (the builder takes
// the highest of head's and the added ones'), so a column id the source
// used, even for a column it dropped again, is never handed out again.
// It reports whether it changed anything.
//
// Whether the change may be carried at all (compatible, and on one side
// only) is classify.StructureConflict's to say; what CarryStructure
// refuses (ErrStructure) is an id that means something else on the
// target.
func CarryStructure(b *table.MetadataBuilder, base, head, src table.Metadata) (bool, error) {
	changed := false
	for _, s := range src.Schemas() {
		if have := schemaByID(head, s.ID); have != nil {
			if !have.Equals(s) {
				return false, fmt.Errorf("%w: schema %d differs on the source and the target", ErrStructure, s.ID)
			}
			continue
		}
		// The builder keeps the schema's id unless an equal schema
		// exists under another id (then it is refused: the source's
		// snapshots name this id).
		add := iceberg.NewSchemaWithIdentifiers(s.ID, s.IdentifierFieldIDs, s.Fields()...)
		if err := b.AddSchema(add); err != nil {
			return false, fmt.Errorf("%w: schema %d: %w", ErrStructure, s.ID, err)
		}
		if got, err := b.GetSchemaByID(s.ID); err != nil || !got.Equals(s) {
			return false, fmt.Errorf("%w: the source's schema %d would have another id on the target", ErrStructure, s.ID)
		}
		changed = true
	}
	if cur := src.CurrentSchema(); cur != nil && (base == nil || base.CurrentSchema() == nil || base.CurrentSchema().ID != cur.ID) {
		if b.CurrentSchema() == nil || b.CurrentSchema().ID != cur.ID {
			if err := b.SetCurrentSchemaID(cur.ID); err != nil {
				return false, fmt.Errorf("%w: current schema %d: %w", ErrStructure, cur.ID, err)
			}
			changed = true
		}
	}

	// Specs bind to the builder's current schema: the source's, now.
	for _, spec := range src.PartitionSpecs() {
		if have := head.PartitionSpecByID(spec.ID()); have != nil {
			if !have.Equals(spec) {
				return false, fmt.Errorf("%w: partition spec %d differs on the source and the target", ErrStructure, spec.ID())
			}
			continue
		}
		if err := b.AddPartitionSpec(&spec, false); err != nil {
			return false, fmt.Errorf("%w: partition spec %d: %w", ErrStructure, spec.ID(), err)
		}
		got, err := b.GetSpecByID(spec.ID())
		if err != nil || !got.Equals(spec) {
			return false, fmt.Errorf("%w: the source's partition spec %d would have another id on the target", ErrStructure, spec.ID())
		}
		changed = true
	}
	if id := src.DefaultPartitionSpec(); base == nil || base.DefaultPartitionSpec() != id {
		if head.DefaultPartitionSpec() != id {
			if err := b.SetDefaultSpecID(id); err != nil {
				return false, fmt.Errorf("%w: default partition spec %d: %w", ErrStructure, id, err)
			}
			changed = true
		}
	}

	for _, order := range src.SortOrders() {
		if have, err := b.GetSortOrderByID(order.OrderID()); err == nil {
			if !have.Equals(order) {
				return false, fmt.Errorf("%w: sort order %d differs on the source and the target", ErrStructure, order.OrderID())
			}
			continue
		}
		add := order
		if err := b.AddSortOrder(&add); err != nil {
			return false, fmt.Errorf("%w: sort order %d: %w", ErrStructure, order.OrderID(), err)
		}
		if add.OrderID() != order.OrderID() {
			return false, fmt.Errorf("%w: the source's sort order %d is sort order %d on the target", ErrStructure, order.OrderID(), add.OrderID())
		}
		changed = true
	}
	if id := src.DefaultSortOrder(); base == nil || base.DefaultSortOrder() != id {
		if head.DefaultSortOrder() != id {
			if err := b.SetDefaultSortOrderID(id); err != nil {
				return false, fmt.Errorf("%w: default sort order %d: %w", ErrStructure, id, err)
			}
			changed = true
		}
	}
	return changed, nil
}

// WithStructure is head with CarryStructure applied (head itself when
// there is nothing to carry), as the metadata a cherry-pick goes onto:
// its picks then find the schemas and specs they were written with. The
// result records no metadata-log entry of its own; the cherry-pick's
// builder records head's file.
func WithStructure(base, head, src table.Metadata) (table.Metadata, error) {
	b, err := table.MetadataBuilderFromBase(head, "")
	if err != nil {
		return nil, fmt.Errorf("carry structure: %w", err)
	}
	changed, err := CarryStructure(b, base, head, src)
	if err != nil || !changed {
		return head, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStructure, err)
	}
	return meta, nil
}

func schemaByID(m table.Metadata, id int) *iceberg.Schema {
	for _, s := range m.Schemas() {
		if s.ID == id {
			return s
		}
	}
	return nil
}
