// Package lakescenario is the shared vocabulary of floe's data-driven
// scenario tests over real Iceberg tables.
//
// It is what floe's data-driven scenario tests over real Iceberg tables
// (classify, mergeengine and mergecheck, with cockroachdb/datadriven) share:
// a catalog per branch (lake@BRANCH, iceberg-go's REST catalog on a
// conformance/testkit/testserver floe), the argument helpers, the scenario
// tables' schema, and the commands that write those tables the same way in
// every package (table, branch, drop, append, overwrite, delete, alter, the
// new file of a compaction). Each package's driver keeps its own commands
// and the rendering of its outputs; the scenario languages are described in
// each package's testdata/README.md.
//
// It is for tests only: it imports conformance/testkit/testserver (so assemble), and
// nothing but tests imports it.
package lakescenario
