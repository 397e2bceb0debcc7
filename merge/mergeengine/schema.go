package mergeengine

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// A merge of a table both sides changed carries what one side changed of
// its structure (schema, partition spec, sort order), when classify lets
// it (classify.StructureConflict: compatible, and on one side only; else
// the table is structural and refused). The source's change is added to
// the target's metadata (tablemerge.CarryStructure: its schemas, specs
// and sort orders, under the ids the source gave them, made current),
// before its snapshots are picked onto it, so they find the schema and
// specs they were written with. The target's own change needs nothing:
// the source's snapshots use the base's structure, which the target
// still holds, and the merged table keeps the target's current ids. Data
// files are never rewritten: every file keeps its spec and is read
// through field ids, as after any schema evolution.

// headWithStructure is the target's metadata tgt with the source's
// structure changes since base carried onto it (tgt itself when the
// source changed none). why is a refusal: an id that means something else
// on the target.
func (e *Engine) headWithStructure(ctx context.Context, base *versionstore.Content, src, tgt table.Metadata) (_ table.Metadata, why string, _ error) {
	baseMeta, err := e.baseMetadata(ctx, base)
	if err != nil {
		return nil, "", err
	}
	head, err := tablemerge.WithStructure(baseMeta, tgt, src)
	if errors.Is(err, tablemerge.ErrStructure) {
		return nil, err.Error(), nil
	}
	return head, "", err
}

// carryStructure is headWithStructure applied to a builder of the
// target's table (a merge without snapshots to pick: the source changed
// only metadata).
func (e *Engine) carryStructure(ctx context.Context, b *table.MetadataBuilder, base *versionstore.Content, src, tgt table.Metadata) (why string, _ error) {
	baseMeta, err := e.baseMetadata(ctx, base)
	if err != nil {
		return "", err
	}
	_, err = tablemerge.CarryStructure(b, baseMeta, tgt, src)
	if errors.Is(err, tablemerge.ErrStructure) {
		return err.Error(), nil
	}
	return "", err
}
