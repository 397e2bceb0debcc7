// Command seed writes the data the console's browser test looks at into a
// running floe.
//
// Through iceberg-go (tables, snapshots, a schema change, a view) and the
// Nessie API v2 (branches, a tag, a merge), as a real user's engines would.
// It is run by server/console/test/run.sh; it is no part of floe.
//
// What it leaves: on main (by merges of a branch ingest/staging, as the default
// policy lets main be written only through merges), tables sales.orders (partitioned by region),
// sales.customers and sales.regions, a view sales.big_orders, a merged branch ingest/hotfix and a
// tag v1; a branch ingest/daily with two more appends to sales.orders, a new
// column on sales.customers and a new table sales.returns, not merged; and
// for the merge queue, ingest/queued (an append to sales.orders) and
// users/admin/regions-code (a new column on sales.regions, structural).
//
// It must not import floe's server packages: it is a client, like the
// engines it stands for.
package main
