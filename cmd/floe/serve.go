package main

import (
	"context"
	"time"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/server"
)

func newServeCommand() *cobra.Command {
	cfg := server.DefaultConfig()
	var logLevel, logFormat string
	warehouseName := "lake"
	idempotencyKeyLifetime := icebergrest.DefaultIdempotencyKeyLifetime
	wf := &warehouseFlags{}
	secFlags := &securityFlags{}
	sec := &security{}

	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the floe catalog server",
		Long: "Run the floe catalog server with its embedded version store.\n\n" +
			"Every flag falls back to a FLOE_* environment variable (--data-dir to\n" +
			"FLOE_DATA_DIR); the command line wins. SIGINT or SIGTERM shuts down\n" +
			"gracefully; a second signal exits at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			logger.Info("starting floe", "version", versionString())
			// cmd.Context() ends when shutdown begins, which stops the
			// facade's background work before the store closes.
			// The security mount runs first: the APIs' mounts use what it
			// sets up.
			cfg.Mounts = append(cfg.Mounts, securityMount(cmd.Context(), secFlags, cfg.Addr, logger, sec))
			cfg.Mounts = append(cfg.Mounts, icebergMount(cmd.Context(), warehouseName, wf, idempotencyKeyLifetime, sec))
			cfg.Mounts = append(cfg.Mounts, func(r *mux.Router, env server.Env) error {
				return nessie.Register(r, nessie.Deps{Store: env.Store, Logger: env.Logger,
					Principal: principalID, Authenticate: sec.auth.Middleware, Guard: sec.guard("nessie")})
			})
			return server.Run(cmd.Context(), cfg, logger)
		},
	}

	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", cfg.Addr, "TCP address to listen on; port 0 picks a free port")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded version store")
	f.StringVar(&cfg.Warehouse, "warehouse", cfg.Warehouse, "root directory for table data")
	wf.register(f)
	secFlags.register(f)
	f.StringVar(&warehouseName, "warehouse-name", warehouseName, "name Iceberg clients select the warehouse by: ?warehouse=NAME, or NAME@BRANCH for a branch")
	f.DurationVar(&idempotencyKeyLifetime, "idempotency-key-lifetime", idempotencyKeyLifetime, "how long the outcome of an Iceberg request sent with an Idempotency-Key is replayed to retries (advertised in /v1/config); 0 turns keys off")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long in-flight requests may run after shutdown begins")
	f.DurationVar(&cfg.DrainDelay, "drain-delay", cfg.DrainDelay, "how long /readyz fails before the listener closes on shutdown")
	f.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body accepted")
	f.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "time allowed to read request headers")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "time allowed to read a whole request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "time allowed to write a response")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "how long idle keep-alive connections stay open")
	annotateEnv(f)
	return cmd
}

// icebergMount adapts the Iceberg REST facade to a server mount: one
// warehouse, named name, at the server's warehouse location as wf reads
// it (see serve_warehouse.go). The facade's background work runs until
// ctx ends. A lifetime of 0 or less turns Idempotency-Key support off.
func icebergMount(ctx context.Context, name string, wf *warehouseFlags, idempotencyKeyLifetime time.Duration, sec *security) server.Mount {
	if idempotencyKeyLifetime <= 0 {
		idempotencyKeyLifetime = -1 // icebergrest's "off"; its 0 means the default
	}
	return func(r *mux.Router, env server.Env) error {
		wh, err := wf.warehouse(name, env.Warehouse)
		if err != nil {
			return err
		}
		return icebergrest.Register(r, icebergrest.Deps{
			Store:                  env.Store,
			Logger:                 env.Logger,
			Metrics:                env.Metrics,
			Warehouses:             []icebergrest.Warehouse{wh},
			IdempotencyKeyLifetime: idempotencyKeyLifetime,
			Context:                ctx,
			Principal:              principalID,
			Authenticate:           sec.auth.Middleware,
			Guard:                  sec.guard("iceberg"),
		})
	}
}
