package icebergtable

// Commit properties recording what an Iceberg operation did, in the
// version-store commits that change tables and views. Every commit the
// Iceberg REST facade makes carries PropOperation; the others when they
// apply. The merge engine and queue read and write the same names.
const (
	PropOperation        = "iceberg.operation"
	PropTable            = "iceberg.table"
	PropTables           = "iceberg.tables"
	PropOperations       = "iceberg.operations" // table=operation pairs of a transaction
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
