// Package manifestread reads Iceberg manifest lists and manifests, also
// those iceberg-go refuses.
//
// It reads Iceberg manifest lists and manifests the way floe's merge layer,
// garbage collector and REST facade need them: through iceberg-go, and, for
// files iceberg-go refuses although every value in them is valid, through a
// re-encoding that fixes only what it objects to. DuckDB's Iceberg extension
// (1.4) is such a writer: it declares every manifest-list field, required
// ones included, as a ["null", T] union (Avro's resolution rules accept that
// for a reader whose field is T as long as no null is written, but the Avro
// library iceberg-go uses rejects the schema before reading a value), and it
// writes content "data" into the header of its delete manifests, which
// iceberg-go checks against the list.
//
// It imports iceberg-go and its Avro library only; never net/http, the
// version store or any other floe package, so every layer that reads
// snapshots (icebergtable, tablemerge, the REST facade) can use it.
package manifestread
