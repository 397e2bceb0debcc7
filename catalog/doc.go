// Package catalog groups what floe is to an engine beside the version store.
//
// icebergtable reads and writes Iceberg metadata within a warehouse's
// location rules, s3sign signs S3 requests on the engines' behalf (never a
// deletion), changefeed derives the catalog's history as events by cursor and
// eventhooks pushes that feed to webhooks. This package holds no code; its
// subpackages sit below the APIs and never import rest/ or server/.
package catalog
