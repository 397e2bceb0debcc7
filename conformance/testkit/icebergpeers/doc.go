// Command icebergpeers measures floe beside two peers on the Iceberg REST
// catalog API.
//
// It measures floe side by side with two peers on the Iceberg REST catalog
// API: Apache Iceberg's reference REST server (RESTCatalogServer on a JDBC
// catalog over SQLite) and Project Nessie's /iceberg endpoint. One client,
// raw net/http and JSON (client.go, over conformance/testkit/benchhttp), sends
// the same bytes to every server; `make bench-peers` runs it through run.sh,
// which starts the servers on loopback (with conformance/testkit/peers.sh,
// shared with conformance/testkit/peerbench) and passes each one's URL and
// process id with -peer. Answers a workload does not look at are read to the
// end and dropped, not decoded, and a loaded table's answer is decoded only
// for the table UUID it is checked by: the driver shares the cores it
// measures the servers on.
//
// The workloads (workload.go): property commits on distinct tables with
// 1, 8 and 32 clients; appends to one hot table with 8 and 32 clients,
// each a snapshot added with assert-ref-snapshot-id and retried up to 4
// times after a 409; loadTable with 1 and 8 clients; loadTable and a
// property commit on a table of 1,000 snapshots. Each append's manifest
// list is a real, empty Avro manifest list the client writes (with
// iceberg-go) onto the storage of the server's warehouse: the local disk
// for floe and the reference server, moto's S3 for Nessie (storage.go).
// After each append step the loss detector (losscheck.go) checks that no
// acknowledged append was lost. Each system's CPU time is read from
// /proc/<pid>/stat around every step (cpu.go), and each step's line
// gives the server's user-space part too, which a shared disk's kernel
// time does not move; the tables (report.go) show medians of alternated
// runs.
//
// Outside its tests it imports no floe package but conformance/testkit/benchhttp
// (standard library only), so every server is driven by exactly the same
// code and none of floe's shortcuts; its test starts
// an in-process floe through conformance/testkit/testserver.
package main
