// Package catalog groups what floe is to an engine beside the version
// store: icebergtable (Iceberg metadata read and written within a
// warehouse's location rules), s3sign (S3 requests signed on the engines'
// behalf, never a deletion), changefeed (the catalog's history as events by
// cursor) and eventhooks (that feed pushed to webhooks). This package itself
// holds no code; its subpackages sit below the APIs and never import rest/
// or server/.
package catalog
