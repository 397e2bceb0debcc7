package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/floeclient"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
	"github.com/floe-catalog/floe/versionstore/storebackup"
	"github.com/floe-catalog/floe/versionstore/storeexport"
)

// adminTimeout is the request timeout of backup and export unless
// --timeout says otherwise: the server answers when the copy is complete.
const adminTimeout = 6 * time.Hour

func newAdminCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Back up, restore, export and import the version store",
		Long: "Operator commands for the version store. backup and export ask a running\n" +
			"server (admins only) and write on the server's machine; restore, import\n" +
			"and export --data-dir run here, on a data directory no server has open.\n\n" +
			"Moving to another machine or backend: `floe admin export FILE` on the\n" +
			"running server, then `floe admin import FILE --data-dir DIR` into an empty\n" +
			"store (see deploy/README.md).",
	}
	cmd.AddCommand(newAdminBackupCommand(), newAdminRestoreCommand(), newAdminExportCommand(), newAdminImportCommand())
	return cmd
}

// longRequest gives fn's client the admin timeout unless --timeout is set.
func longRequest(f *clientFlags, fn func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if !cmd.Flags().Changed("timeout") {
			f.timeout = adminTimeout
		}
		return fn(cmd, args)
	}
}

func newAdminBackupCommand() *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Back up the running server's store into DIR, on the server's machine",
		Long: "Asks the server to write a consistent copy of its embedded store (a Pebble\n" +
			"checkpoint) into DIR while it keeps serving. DIR is a path on the SERVER's\n" +
			"machine: absolute, not existing yet. Every commit acknowledged before the\n" +
			"backup began is in it. On the store's filesystem the backup hard-links the\n" +
			"store's files, so it is fast and small until the store compacts; copy it\n" +
			"elsewhere for safekeeping. `floe admin restore DIR DATA_DIR` restores it.",
		Args: cobra.ExactArgs(1),
		RunE: longRequest(f, f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
			if !filepath.IsAbs(args[0]) {
				return fmt.Errorf("backup: %q: give an absolute path; DIR is on the server's machine", args[0])
			}
			rep, err := cl.Backup(ctx, args[0])
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			if f.json {
				return writeJSON(out, rep)
			}
			fmt.Fprintf(out, "backed up into %s on the server: %d files, %s, in %.1fs\n", rep.Dir, rep.Files, bytesIEC(rep.Bytes), rep.DurationSeconds)
			return nil
		})),
	}
	f.register(cmd)
	return cmd
}

func newAdminRestoreCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restore BACKUP DATA_DIR",
		Short: "Restore a backup into an empty data directory (runs here, no server)",
		Long: "Copies the backup in BACKUP (written by `floe admin backup`) into DATA_DIR,\n" +
			"which must be empty or not exist, then opens it and reads every\n" +
			"reference's head. The backup is only read. Start the server on DATA_DIR\n" +
			"afterwards: `floe serve --data-dir DATA_DIR`.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := storebackup.Restore(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s: %d files, %s, %d references\n", args[0], rep.DataDir, rep.Files, bytesIEC(rep.Bytes), rep.Refs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newAdminExportCommand() *cobra.Command {
	f := &clientFlags{}
	var gz bool
	var dataDir string
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Export the whole history to one portable file",
		Long: "Writes every commit, tree, content value, reference, reference log entry\n" +
			"and record to FILE in floe's export format (versionstore/storeexport/README.md).\n" +
			"Without --data-dir it asks the running server (admins only), which reads a\n" +
			"checkpoint, so the file is one consistent state while writes go on; FILE\n" +
			"is then a path on the SERVER's machine (absolute, not existing yet). With\n" +
			"--data-dir it reads that data directory here, which no server may have\n" +
			"open. `floe admin import FILE --data-dir DIR` reads it back.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir != "" {
				rep, err := storebackup.ExportDir(cmd.Context(), dataDir, args[0], storeexport.ExportOptions{Gzip: gz, Producer: "floe " + version})
				if err != nil {
					return err
				}
				return printExport(cmd.OutOrStdout(), rep, f.json, "")
			}
			return longRequest(f, f.runFloe(func(ctx context.Context, cl *floeclient.Client, out io.Writer, args []string) error {
				if !filepath.IsAbs(args[0]) {
					return fmt.Errorf("export: %q: give an absolute path; FILE is on the server's machine (or export a stopped server's --data-dir here)", args[0])
				}
				rep, err := cl.Export(ctx, args[0], gz)
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				return printExport(out, rep, f.json, " on the server")
			}))(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&gz, "gzip", false, "compress the file")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "export this data directory here instead of asking the server (no server may have it open)")
	f.register(cmd)
	return cmd
}

func printExport(out io.Writer, rep *storebackup.ExportReport, asJSON bool, where string) error {
	if asJSON {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "exported to %s%s: %d objects (%s), %d references, %d reference log entries, %d records; %s in %.1fs\n",
		rep.File, where, rep.Objects, bytesIEC(rep.ObjectBytes), rep.Refs, rep.Log, rep.Records, bytesIEC(rep.FileBytes), rep.DurationSeconds)
	return nil
}

func newAdminImportCommand() *cobra.Command {
	var dataDir, store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE --data-dir DIR | --store postgres://...",
		Short: "Import an export into an empty store (runs here, no server)",
		Long: "Reads FILE (written by `floe admin export`) into a new store: the data\n" +
			"directory DIR, which must be empty or not exist, or with --store (or\n" +
			"FLOE_STORE, which keeps a password off the command line) an empty\n" +
			"PostgreSQL database, which is how a catalog moves off the embedded\n" +
			"store. Every object's hash and\n" +
			"the file's checksum are checked; the references, the reference log and the\n" +
			"records are written last, in one batch, so a truncated or corrupt file\n" +
			"leaves nothing behind (a failed import removes what it wrote).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if store == "" {
				store = os.Getenv("FLOE_STORE")
			}
			kind, where, err := assemble.ParseStore(store, dataDir)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			if kind == assemble.StorePebble && where == "" {
				return errors.New("import: --data-dir is required: the data directory of the new store (or --store postgres://...)")
			}
			start := time.Now()
			var st *storeexport.Stats
			if kind == assemble.StorePebble {
				st, err = storebackup.ImportDir(cmd.Context(), args[0], where)
			} else {
				st, err = importPostgres(cmd.Context(), args[0], where)
				where = "the PostgreSQL store"
			}
			if err != nil {
				return err
			}
			dataDir = where
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s into %s: %d objects (%s), %d references, %d reference log entries, %d records in %.1fs\n",
				args[0], dataDir, st.Objects, bytesIEC(st.ObjectBytes), st.Refs, st.Log, st.Records, time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory of the new store (empty or not existing)")
	cmd.Flags().StringVar(&store, "store", "", "the new store as floe serve --store names it: pebble:DIR or postgres://... (an empty database); default FLOE_STORE")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return cmd
}

// importPostgres imports file into the empty PostgreSQL store at dsn.
func importPostgres(ctx context.Context, file, dsn string) (*storeexport.Stats, error) {
	be, err := pgbackend.Open(ctx, dsn, pgbackend.Options{})
	if err != nil {
		return nil, fmt.Errorf("import: opening the PostgreSQL store: %w", err)
	}
	defer be.Close()
	return storebackup.ImportInto(ctx, file, be)
}
