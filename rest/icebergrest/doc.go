// Package icebergrest is floe's Apache Iceberg REST catalog facade.
//
// It owns the translation between the Iceberg REST API (routes, JSON shapes,
// the error model, requirement and update semantics, metadata.json files in
// the warehouse) and version-store commits.
//
// The catalog branch is chosen by the warehouse a client asks for:
// "lake" is the default branch, "lake@etl/daily" that branch, and a tag or
// "lake@<hash>" a read-only view of that commit. Every change (namespaces,
// table commits, multi-table transactions, renames, drops) is one atomic
// commit on the branch, with a message and properties recording the Iceberg
// operation. Every change is decided by the catalog service (package
// catalog): table commits (updateTable, transactions/commit) by
// Service.CommitTables, view commits by CommitView, creates,
// registrations, renames and drops by CreateTable, RegisterTable,
// RenameTable, DropTable and their view twins, namespaces by
// CreateNamespace, UpdateNamespaceProperties and DropNamespace. This
// package decodes the request, authorizes it, checks the maintenance lock
// (table commits), calls the catalog (write.go) and encodes its answer, mapping the catalog's typed
// refusals onto the REST error model with the Java exception names and
// messages Iceberg's clients expect (errors.go). The catalog validates and
// applies the changes, retries server-side when another writer changed
// the same table between read and commit, and re-parents a pure append
// made on a main that has since moved onto the new head (zero-retry
// appends) instead of refusing it. Mutations honour Idempotency-Key: a
// retry with the same key is answered with the recorded outcome, and a
// commit's record is written in the commit's own batch, so a commit whose
// answer was lost is never made twice.
//
// The warehouses, the metadata cache, metadata files and the mapping from
// a metadata file to a store content value belong to the catalog and the
// Iceberg table package (icebergtable), which this package uses and
// translates into the REST error model.
//
// The package must not import server/ (the composition root, package
// assemble, serves Routes and runs ExpireRecords) and must not reach into
// the version store's internals: it
// uses only versionstore's exported API. Dropping a table never deletes
// files, even with purgeRequested=true.
package icebergrest
