// Package catalog groups what floe is to an engine beside the version store.
//
// The package itself is the catalog service below the APIs: it owns the
// warehouses and the metadata-file cache they share, built once by the
// composition root (server/assemble) and handed to every API and
// background worker that reads or writes table files (the merge engine,
// GC, merge checks, table statistics, the change feed's summaries).
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
