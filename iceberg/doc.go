// Package iceberg groups what floe knows of the Iceberg files in a
// warehouse, and engines' access to them.
//
// icebergtable reads and writes Iceberg table and view metadata within a
// warehouse's location rules, with the metadata cache; s3sign signs
// engines' S3 requests (the Iceberg REST spec's remote signing) and s3vend
// vends them table-scoped credentials (its vended credentials), both never
// a deletion. This package holds no code; its subpackages sit below the
// merge layer and the catalog service, and never import rest/ or server/.
package iceberg
