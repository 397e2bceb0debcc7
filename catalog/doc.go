// Package catalog is the catalog service below the APIs, where a table
// commit is decided.
//
// It commits Iceberg table changes on a branch (Service.CommitTables,
// commit.go):
// requirements checked against the branch head (requirements.go), a stale
// append or row-level commit rebased onto it without a retry (rebase.go,
// rebaserows.go), the updates checked (validate.go, sharedfiles.go,
// limits.go) and applied, the new metadata file's location checked and
// the file written, then one store commit for all the tables of a
// transaction, retried server-side when another writer changed a table in
// between (store.go). Its other writes are decided here too, each one
// store commit with the same retries: view commits (Service.CommitView,
// views.go), creates, registrations, renames and drops of tables and views
// (objects.go) and namespaces' creates, property updates and drops
// (namespaces.go), each asked for by a Write (write.go). It owns the warehouses and the metadata-file cache
// they share, built once by the composition root (server/assemble) and
// handed to every API and background worker that reads or writes table
// files (the merge engine, GC, merge checks, table statistics, the change
// feed's summaries). Its refusals are Errors of a Kind (errors.go), which
// each API maps onto its own error model.
//
// Its subpackages: icebergtable reads and writes Iceberg metadata within a
// warehouse's location rules, s3sign signs S3 requests on the engines'
// behalf (never a deletion), changefeed derives the catalog's history as
// events by cursor and eventhooks pushes that feed to webhooks.
//
// It must not import net/http, rest/ or server/ (imports_test.go holds it
// to that): the APIs translate their requests into its calls and its
// refusals into their error models.
package catalog
