package assemble

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/server"
)

// DefaultDataDir is where the version store lives when Config.DataDir is
// empty.
const DefaultDataDir = "./data"

// Config is one floe server process's configuration: plain data, as
// etcd's embed.Config is, that flags or a file fill in and a test can
// compare or print. What is live (services, functions, clocks, stubs, a
// file system) is Deps, handed to Build beside it; TestConfigIsData holds
// Config to that.
type Config struct {
	// HTTP configures the HTTP server: listen address, limits, timeouts,
	// the drain delay and the shutdown timeout.
	HTTP server.Settings
	// DataDir holds the embedded Pebble version store; created if
	// missing. "" means DefaultDataDir.
	DataDir string
	// Store selects the version store's backend: "" or "pebble:DIR" is
	// the embedded Pebble store (in DIR, else DataDir); a postgres:// or
	// postgresql:// URL is a PostgreSQL database shared with other
	// replicas (versionstore/pgbackend). See ParseStore.
	Store string
	// StoreCacheBytes bounds the version store's cache of decoded
	// objects (versionstore.Options.CacheBytes); 0 means its backend's
	// default (StoreCacheBytes).
	StoreCacheBytes int64
	// Security says who callers are and what they may do.
	Security Security
	// Catalog configures the catalog service (package catalog), which
	// owns the warehouses and their metadata cache and which the APIs,
	// the merge engine, GC, merge checks and table statistics share. The
	// root sets Warehouses from Iceberg.Warehouses.
	Catalog catalog.Config
	// Iceberg configures the Iceberg REST facade.
	Iceberg Iceberg
	// Maintenance configures the maintenance locks, which floe's API
	// serves and the Iceberg REST facade enforces.
	Maintenance Maintenance
	// MergePartitionOverlap is the catalog default for tables without the
	// floe.merge.partition-overlap property: allow, check or refuse; ""
	// is check (mergeengine.DefaultOverlapRule).
	MergePartitionOverlap string
	// RefRetention configures references' retention and their expiry.
	RefRetention RefRetention
	// GC configures garbage collection of warehouse files (package gc),
	// served by floe's API; its schedule is off unless Interval is set.
	GC GC
	// MergeQueue configures the merge queue, served by floe's API.
	MergeQueue MergeQueue
	// LeaseTTL, over a shared store (PostgreSQL), is how long a lease
	// (a merge-queue target's committer, the GC and ref-expiry
	// schedules) outlives its holder's last renewal; 0 is
	// DefaultLeaseTTL. Failover takes at most LeaseTTL + LeaseTTL/3.
	LeaseTTL time.Duration
	// MergeChecks configure the validation of the queue's candidates,
	// used unless Deps.MergeValidator is set.
	MergeChecks MergeChecks
	// EventWebhooks push the change feed to webhooks; delivery runs on
	// one replica at a time (the lease "eventhooks").
	EventWebhooks EventWebhooks
}

// Deps are what a process is built with besides its Config: what is
// live, or stands in for a service in tests. Every field may be left
// zero; the root then builds or chooses the real thing.
type Deps struct {
	// StoreFS is the file system the embedded Pebble store lives on; nil
	// is the real disk. Tests pass a fault-injecting one (Pebble's
	// vfs/errorfs) to play a full disk or an unwritable directory.
	StoreFS vfs.FS
	// TracerProvider traces requests and what they do (authorization,
	// metadata files, version-store commits, merges); nil records
	// nothing. cmd/floe builds it from the OTEL_* variables (package
	// tracing) and flushes it after the process closed.
	TracerProvider trace.TracerProvider
	// Routes are extra routes, mounted after the APIs'; for tests and
	// embedders. They must only register handlers.
	Routes []server.Mount
	// Iceberg, Nessie and Floe are the APIs' Deps. The root sets the
	// store, the catalog, the logger, the metrics and the data from
	// Config (Iceberg's warehouses and settings), and builds every
	// service a field leaves nil: Principal, Authenticate and Guard from
	// authentication and the policy engine, the maintenance locks, the
	// merge engine, the queue and so on. Tests set stubs.
	Iceberg icebergrest.Deps
	Nessie  nessie.Deps
	Floe    floeapi.Deps
	// MaintenanceNow, RefRetentionNow and MergeQueueNow are the clocks of
	// the maintenance locks, of reference expiry and of the merge queue;
	// nil is time.Now. Tests move them instead of sleeping.
	MaintenanceNow, RefRetentionNow, MergeQueueNow func() time.Time
	// AuthnNow is the clock authentication checks tokens' expiry by; nil
	// is time.Now.
	AuthnNow func() time.Time
	// VendNow is the clock of the STS clients of vended credentials
	// (how long what they vended stays cached); nil is time.Now.
	VendNow func() time.Time
	// MergeValidator judges every merge-queue candidate; nil means
	// mergecheck's, built from Config.MergeChecks (see mergecheck.go).
	MergeValidator mergequeue.Validator
}

// Iceberg configures the Iceberg REST facade (icebergrest.Deps' plain
// settings).
type Iceberg struct {
	// Warehouses lists the warehouses served; at least one. The
	// directories of local (file://) warehouses are created if missing.
	Warehouses []icebergrest.Warehouse
	// DefaultWarehouse is used when a client names none; "" means the
	// first of Warehouses.
	DefaultWarehouse string
	// IdempotencyKeyLifetime: see icebergrest.Deps.
	IdempotencyKeyLifetime time.Duration
	// SnapshotMetricTables: see icebergrest.Deps.
	SnapshotMetricTables int
	// EventsEndpoint serves the events endpoint of the Iceberg REST
	// spec's open proposal: see icebergrest.Deps.
	EventsEndpoint bool
}

// Maintenance configures the maintenance locks (maintenance.Options'
// plain settings).
type Maintenance struct {
	// MaxTTL bounds a lease's TTL; 0 means maintenance.DefaultMaxTTL.
	MaxTTL time.Duration
}

// GC configures garbage collection.
type GC struct {
	// Interval runs a collection this often in the background; 0 never
	// does (runs then come from floe's API only).
	Interval time.Duration
	// Grace is how old an unreferenced file must be to go; 0 means
	// gc.DefaultGrace (3 days).
	Grace time.Duration
	// TempDir holds a run's mark database; "" is the system's.
	TempDir string
	// ReportFile, if set, receives each real run's report as JSON.
	ReportFile string
}

// Security configures authentication and authorization.
type Security struct {
	// Authn says where principals come from. With Authn.Dev, requests
	// without a token are the anonymous principal, and HTTP.Addr must then
	// be a loopback address.
	Authn Authn
	// Policy turns authorization on with these engine settings; nil
	// allows every request. The root sets the engine's logger, registry
	// and activation hook, and its decision log when DecisionLog below
	// names a file.
	Policy *Policy
	// DecisionLog is a file every decision is appended to as one JSON
	// line, "-" for standard output, "" for none. It needs Policy; the
	// file is closed after the policy engine, which flushes into it.
	DecisionLog string
}
