package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/internal/nessieclient"
)

func main() {
	// The first SIGINT or SIGTERM cancels ctx and starts a graceful
	// shutdown; once it has, stop restores the default handling so a second
	// signal ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()

	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		msg := "floe: " + err.Error()
		if ne, ok := errors.AsType[*nessieclient.Error](err); ok && ne.Status == http.StatusUnauthorized {
			msg += "\nfloe: set FLOE_TOKEN to a bearer token the server accepts"
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "floe",
		Short: "A git-like catalog for Apache Iceberg",
		Long: "floe is a git-like catalog for Apache Iceberg: engines talk to it through the\n" +
			"Iceberg REST catalog API while every change lands as a commit in a\n" +
			"whole-catalog history with branches, tags and merges.",
		// main prints errors as one line; cobra must not add usage dumps.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newServeCommand(), newVersionCommand(), newBranchCommand(), newTagCommand(), newLogCommand(), newDiffCommand(), newShowCommand(), newLsCommand(), newMergeCommand(), newTransplantCommand(), newAuthCommand())
	return root
}
