package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/server/tracing"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// defaultWarehouse is where table data lives without --warehouse.
const defaultWarehouse = "./warehouse"

func newServeCommand() *cobra.Command {
	cfg := assemble.Config{HTTP: server.DefaultConfig().Settings, DataDir: assemble.DefaultDataDir}
	var logLevel, logFormat string
	warehouse := defaultWarehouse
	warehouseName := "lake"
	idempotencyKeyLifetime := icebergrest.DefaultIdempotencyKeyLifetime
	var metadataCacheBytes, maxMetadataFileBytes int64 = icebergtable.DefaultMetadataCacheBytes, icebergtable.DefaultMaxMetadataFileBytes
	var memoryLimit int64
	var allowedLocations []string
	var refRetentionFile string
	var mergeQueueFile string
	var pprofAddr string
	var icebergEvents bool
	wf := &warehouseFlags{}
	secFlags := &securityFlags{}

	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the floe catalog server",
		Long: "Run the floe catalog server with its embedded version store.\n\n" +
			"Every flag falls back to a FLOE_* environment variable (--data-dir to\n" +
			"FLOE_DATA_DIR), then to the --config file (data-dir: ...); the command\n" +
			"line wins. SIGINT or SIGTERM shuts down\n" +
			"gracefully; a second signal exits at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The root declares the client commands' flags (main.go); they
			// mean nothing to the server.
			for _, name := range []string{"server", "json", "timeout"} {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s is a flag of the client commands, not of serve", name)
				}
			}
			settings, err := resolveSettings(cmd)
			if err != nil {
				return err
			}
			if printConfig, _ := cmd.Flags().GetBool(printConfigFlag); printConfig {
				return settings.print(cmd.OutOrStdout())
			}
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			logger.Info("starting floe", "version", versionString())
			limit, set := applyMemoryLimit(memoryLimit, metadataCacheBytes, assemble.StoreCacheBytes(cfg)+pebbleGoHeap(cfg))
			if set {
				logger.Info("memory limit", "bytes", limit)
			}
			if pct, ok := applyGCPercent(set || os.Getenv("GOMEMLIMIT") != ""); ok {
				logger.Info("garbage collector", "gc_percent", pct)
			}
			if cfg.Security, err = secFlags.security(cfg.HTTP.Addr); err != nil {
				return err
			}
			wh, err := wf.warehouse(warehouseName, warehouse)
			if err != nil {
				return err
			}
			if wh.AllowedLocations, err = checkAllowedLocations(allowedLocations); err != nil {
				return err
			}
			cfg.Iceberg = assemble.Iceberg{Warehouses: []icebergrest.Warehouse{wh}, IdempotencyKeyLifetime: idempotencyKeyLifetime, EventsEndpoint: icebergEvents}
			cfg.Catalog = catalog.Config{MetadataCacheBytes: metadataCacheBytes, MaxMetadataFileBytes: maxMetadataFileBytes}
			if metadataCacheBytes <= 0 {
				cfg.Catalog.MetadataCacheBytes = -1 // the catalog's "off"
			}
			if maxMetadataFileBytes <= 0 {
				return fmt.Errorf("--max-metadata-file-bytes must be positive, got %d", maxMetadataFileBytes)
			}
			if idempotencyKeyLifetime <= 0 {
				cfg.Iceberg.IdempotencyKeyLifetime = -1 // icebergrest's "off"; its 0 means the default
			}
			if refRetentionFile != "" {
				rc, err := refretention.LoadConfig(refRetentionFile)
				if err != nil {
					return err
				}
				cfg.RefRetention.Config = &rc
			}
			tp, err := tracing.FromEnv(cmd.Context(), versionString())
			if err != nil {
				return err
			}
			if tp.Enabled {
				logger.Info("tracing on", "exporter", tp.Exporter)
			}
			deps := assemble.Deps{TracerProvider: tp}
			if mergeQueueFile != "" {
				rules, err := mergequeue.LoadRules(mergeQueueFile)
				if err != nil {
					return err
				}
				cfg.MergeQueue.Rules = &rules
			}
			if pprofAddr != "" {
				ln, err := server.ListenProfiles(cmd.Context(), pprofAddr)
				if err != nil {
					return err
				}
				// For measuring only: once listening, a failure is logged,
				// never fatal to the catalog.
				go func() {
					if err := server.ServeProfiles(cmd.Context(), ln, logger); err != nil {
						logger.Error("profiles not served", "err", err)
					}
				}()
			}
			// cmd.Context() ends at the first SIGINT or SIGTERM: the HTTP
			// server drains, then every service closes, the store last;
			// then the spans still buffered are flushed.
			err = assemble.Run(cmd.Context(), cfg, deps, logger)
			flushTraces(tp, logger)
			return secFlags.explain(err)
		},
	}

	f := cmd.Flags()
	f.StringVar(&cfg.HTTP.Addr, "addr", cfg.HTTP.Addr, "TCP address to listen on; port 0 picks a free port")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded version store")
	f.StringVar(&cfg.Store, "store", "", "version store backend: pebble:DIR (the default, in --data-dir) or a postgres://user@host/db URL shared by several replicas; give the URL in FLOE_STORE to keep a password off the command line")
	f.StringVar(&warehouse, "warehouse", warehouse, "root directory for table data")
	wf.register(f)
	f.StringSliceVar(&allowedLocations, "allowed-location", nil, "extra location prefix (a directory, file:// or s3:// URL) clients may place tables and views under besides the warehouse, as Polaris's allowed locations; repeatable, comma-separated in the environment; never a file system root")
	secFlags.register(f)
	f.StringVar(&warehouseName, "warehouse-name", warehouseName, "name Iceberg clients select the warehouse by: ?warehouse=NAME, or NAME@BRANCH for a branch")
	f.DurationVar(&idempotencyKeyLifetime, "idempotency-key-lifetime", idempotencyKeyLifetime, "how long the outcome of an Iceberg request sent with an Idempotency-Key is replayed to retries (advertised in /v1/config); 0 turns keys off")
	f.Int64Var(&metadataCacheBytes, "metadata-cache-bytes", metadataCacheBytes, "memory budget of the cache of parsed Iceberg metadata files and decoded manifest lists and manifests (approximate); 0 turns the cache off")
	f.Int64Var(&cfg.StoreCacheBytes, "store-cache-bytes", 0, "memory budget of the version store's cache of decoded commits and trees; 0 is "+fmt.Sprint(assemble.DefaultPebbleStoreCacheBytes>>20)+" MiB on the embedded Pebble store, "+fmt.Sprint(assemble.DefaultPostgresStoreCacheBytes>>20)+" MiB on PostgreSQL (where a miss is a round trip)")
	f.Int64Var(&memoryLimit, "memory-limit", 0, "soft limit of the Go runtime's memory in bytes (runtime/debug.SetMemoryLimit); 0 derives it from the cache budgets (metadata + store caches + "+fmt.Sprint(memoryHeadroom>>20)+" MiB, plus Pebble's cache and memtables in a build without cgo, where they are in the Go heap), negative leaves it to GOMEMLIMIT; GOMEMLIMIT, if set, wins")
	f.Int64Var(&maxMetadataFileBytes, "max-metadata-file-bytes", maxMetadataFileBytes, "largest Iceberg table or view metadata file read (after gunzipping); a larger one is refused")
	f.StringVar(&refRetentionFile, "ref-retention", "", "JSON file of branch retention defaults by name prefix and protected prefixes (see housekeeping/refretention/README.md); without it: ingest/ 2d, transform/ 7d, feature/ and users/ 30d, others never expire")
	f.DurationVar(&cfg.RefRetention.ExpiryInterval, "ref-expiry-interval", time.Hour, "how often expired branches and tags are deleted; 0 turns the background sweep off (floe branch expire still runs one)")
	f.StringVar(&cfg.MergeChecks.File, "merge-checks", "", "JSON file of the merge queue's external checks (HMAC-signed webhooks) and default check thresholds (see merge/mergecheck/README.md, deploy/merge-checks.json); the built-in checks and the policy bundle's merge rules run without it")
	f.StringVar(&cfg.MergeChecks.CatalogURI, "merge-checks-catalog-uri", "", "floe's Iceberg REST URL as external merge checks reach it, sent to them with each candidate (lake@<candidate> on it)")
	f.BoolVar(&icebergEvents, "iceberg-events", false, "serve the Iceberg REST spec's proposed events endpoint, POST /v1/{prefix}/events (apache/iceberg#12584, still open), from the change feed (see docs/changefeed.md)")
	f.StringVar(&cfg.EventWebhooks.File, "event-webhooks", "", "JSON file of the change feed's webhook subscriptions: URL, HMAC secret (from a file or variable), principal, filters by ref, type, namespace and table (see docs/changefeed.md, deploy/event-webhooks.json); each gets its events as CloudEvents, at least once and in order, from a durable cursor")
	f.StringVar(&mergeQueueFile, "merge-queue", "", "JSON file of the merge queue's rules: protected branches (the queue is their single committer), age limit, batch size, and per source prefix batching, required checks, drop after merge and tag (see merge/mergequeue/README.md, deploy/merge-queue.json); without it: no branch protected, ingest/ transform/ users/ feature/ batched, backfill/ alone")
	f.DurationVar(&cfg.GC.Interval, "gc-interval", 0, "run garbage collection (floe gc) this often in the background; 0 never (runs only when asked)")
	f.DurationVar(&cfg.GC.Grace, "gc-grace", 0, "how old an unreferenced warehouse file must be before garbage collection deletes it; 0 means 72h")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", assemble.DefaultLeaseTTL, "with --store postgres://: how long a replica's lease (a merge-queue target's committer, the gc and ref-expiry schedules) outlives its last renewal; a dead replica's work is taken over within this plus a third of it")
	f.StringVar(&cfg.GC.ReportFile, "gc-report-file", "", "file each garbage collection run's report is written to as JSON (the last report is also kept in the store)")
	f.StringVar(&pprofAddr, "pprof-addr", "", "serve Go's runtime profiles (net/http/pprof) on this loopback address, e.g. 127.0.0.1:6060; off when empty")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.DurationVar(&cfg.HTTP.ShutdownTimeout, "shutdown-timeout", cfg.HTTP.ShutdownTimeout, "how long in-flight requests may run after shutdown begins")
	f.DurationVar(&cfg.HTTP.DrainDelay, "drain-delay", cfg.HTTP.DrainDelay, "how long /readyz fails before the listener closes on shutdown")
	f.Int64Var(&cfg.HTTP.MaxBodyBytes, "max-body-bytes", cfg.HTTP.MaxBodyBytes, "largest request body accepted")
	f.Int64Var(&cfg.HTTP.MaxBodyBytesInFlight, "max-body-bytes-in-flight", 0, "bytes of request bodies all requests in flight may hold together; beyond it requests get 503 with Retry-After. 0 is an eighth of the memory limit (8 x --max-body-bytes without one), never less than --max-body-bytes; negative turns the bound off")
	f.DurationVar(&cfg.HTTP.ReadHeaderTimeout, "read-header-timeout", cfg.HTTP.ReadHeaderTimeout, "time allowed to read request headers")
	f.DurationVar(&cfg.HTTP.ReadTimeout, "read-timeout", cfg.HTTP.ReadTimeout, "time allowed to read a whole request")
	f.DurationVar(&cfg.HTTP.WriteTimeout, "write-timeout", cfg.HTTP.WriteTimeout, "time allowed to write a response")
	f.DurationVar(&cfg.HTTP.IdleTimeout, "idle-timeout", cfg.HTTP.IdleTimeout, "how long idle keep-alive connections stay open")
	registerConfigFlags(f)
	annotateEnv(f)
	return cmd
}

// memoryHeadroom is what the memory limit allows the Go heap beyond the
// two caches' budgets: the policy engine, Pebble's Go-side state and the
// working set of concurrent requests (decoded and encoded metadata files,
// each bounded by --max-metadata-file-bytes), and room for the collector
// to let garbage pile up between its runs. Pebble's block cache (64
// MiB) and memtables (64 MiB, two while one flushes) are allocated outside
// the Go heap and come on top (see docs/operating.md, Memory). Once the
// caches are full the live heap is about their budgets plus 70 MB, and
// the runtime keeps some 90 MB more than the heap's goal, so what is left
// of the headroom decides how often the collector runs under load (issue
// 14): with 128 MiB back to back (38% of the CPU); with 256 MiB every
// ~110 MB allocated, about three times a second at 2,000 commits/s and
// 12-16% of the CPU per Iceberg commit; with 384 MiB every ~240 MB. The
// static build's default limit (672 MiB on Pebble) stays below the Helm
// chart's 1 GiB container limit.
const memoryHeadroom = 384 << 20

// pebbleGoHeap is the part of the embedded store's memory the Go heap
// holds (all of Pebble's cache and memtables in a build without cgo);
// the derived memory limit makes room for it, or the collector would run
// back to back once Pebble's buffers are full.
func pebbleGoHeap(cfg assemble.Config) int64 {
	if kind, _, err := assemble.ParseStore(cfg.Store, cfg.DataDir); err != nil || kind != assemble.StorePebble {
		return 0
	}
	return pebblebackend.GoHeapBytes
}

// applyMemoryLimit sets the Go runtime's soft memory limit, so the
// garbage collector runs before the heap outgrows what the caches are
// allowed: without it the heap grows to twice its live size (GOGC=100),
// and full caches then cost twice their budget in RSS. A GOMEMLIMIT in the
// environment wins. It returns the limit it set.
func applyMemoryLimit(limit, metadataCacheBytes, storeCacheBytes int64) (int64, bool) {
	if os.Getenv("GOMEMLIMIT") != "" || limit < 0 {
		return 0, false
	}
	if limit == 0 {
		limit = max(metadataCacheBytes, 0) + max(storeCacheBytes, 0) + memoryHeadroom
	}
	debug.SetMemoryLimit(limit)
	return limit, true
}

// limitedGCPercent is the collector's GOGC while a memory limit holds the
// heap: the heap may grow to five times its live size between
// collections, never past the limit. A serving floe's live heap is mostly
// its caches; while they are far from full, GOGC=100 collected every time
// a few hundred commits had allocated the live size again, about 11% of
// the CPU of 32 clients' commits (issue 14); under the limit the
// collector runs as it did before.
const limitedGCPercent = 400

// applyGCPercent sets limitedGCPercent when a memory limit bounds the heap
// and GOGC is not in the environment (which wins); without a limit it
// leaves GOGC=100, whose growth is then the only bound.
func applyGCPercent(limited bool) (int, bool) {
	if !limited || os.Getenv("GOGC") != "" {
		return 0, false
	}
	debug.SetGCPercent(limitedGCPercent)
	return limitedGCPercent, true
}

// traceFlushTimeout bounds how long shutdown waits for the last spans to
// reach the collector: an unreachable collector must not hold the exit.
const traceFlushTimeout = 5 * time.Second

// flushTraces sends the spans still buffered; a failure is logged, not
// returned: the server itself shut down cleanly.
func flushTraces(tp *tracing.Provider, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		logger.Warn("flushing traces failed", "err", err)
	}
}
