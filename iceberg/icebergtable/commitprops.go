package icebergtable

// Commit properties recording what an Iceberg operation did, in the
// version-store commits that change tables and views. Every commit the
// Iceberg REST facade makes carries PropOperation; the others when they
// apply. The merge engine and queue read and write the same names.
const (
	PropOperation  = "iceberg.operation"
	PropTable      = "iceberg.table"
	PropTables     = "iceberg.tables"
	PropOperations = "iceberg.operations" // table=operation pairs of a transaction
	// PropChanges lists, comma-separated, every change a commit made to
	// one table, in order: metadata changes (schema-change,
	// partition-spec-change, sort-order-change, format-version-upgrade,
	// set-location, properties, statistics), then each snapshot added
	// (append, overwrite, replace, delete, update), then table-refs if
	// refs moved without a new snapshot. A multi-table transaction
	// records it per table as PropChanges + "." + the table's name.
	PropChanges          = "iceberg.changes"
	PropView             = "iceberg.view"
	PropNamespace        = "iceberg.namespace"
	PropSnapshotID       = "iceberg.snapshot-id"
	PropTableRef         = "iceberg.ref"
	PropMetadataLocation = "iceberg.metadata-location"
	PropRenamedFrom      = "iceberg.renamed-from"
	PropPurgeRequested   = "iceberg.purge-requested"
)

// Operations returns the values of PropOperation.
func Operations() []string {
	return []string{
		"create", "append", "overwrite", "replace", "delete", "update", "drop", "rename",
		"register", "unregister", "transaction",
		"create-namespace", "update-namespace", "drop-namespace",
		"create-view", "replace-view", "drop-view", "rename-view", "register-view",
	}
}
