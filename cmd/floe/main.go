package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/internal/floeclient"
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
		ne, nessieErr := errors.AsType[*nessieclient.Error](err)
		fe, floeErr := errors.AsType[*floeclient.Error](err)
		if (nessieErr && ne.Status == http.StatusUnauthorized) || (floeErr && fe.Status == http.StatusUnauthorized) {
			msg += "\nfloe: not authorized: check FLOE_TOKEN, the bearer token the server accepts"
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(exitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "floe",
		Short: "A git-like catalog for Apache Iceberg",
		Long: "floe is a git-like catalog for Apache Iceberg: engines talk to it through the\n" +
			"Iceberg REST catalog API while every change lands as a commit in a\n" +
			"whole-catalog history with branches, tags and merges.\n\n" +
			"The client commands (branch, tag, log, diff, show, ls, merge, transplant,\n" +
			"maintenance, table, gc)\n" +
			"take these flags before or after the command name:\n" +
			"  --server URL       the floe server (default " + defaultServer + ") [$FLOE_SERVER]\n" +
			"  --json             print the API's JSON objects instead of tables\n" +
			"  --timeout DURATION timeout of each request to the server\n" +
			"and send $FLOE_TOKEN, if set, as a bearer token.",
		// main prints errors as one line; cobra must not add usage dumps.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	registerGlobalClientFlags(root)
	plainBoolHelp(root)
	root.AddCommand(newServeCommand(), newVersionCommand(), newBranchCommand(), newTagCommand(), newLogCommand(), newDiffCommand(), newShowCommand(), newLsCommand(), newMergeCommand(), newTransplantCommand(), newAuthCommand(),
		newMaintenanceCommand(), newTableCommand(), newGCCommand(),
		newQueueCommand(), newEventsCommand())
	root.AddCommand(newAdminCommand())
	root.AddCommand(newHealthcheckCommand())
	return root
}

// registerGlobalClientFlags declares the client commands' flags on the
// root too, hidden, so that cobra knows --json takes no value when it
// meets it before the command name: otherwise `floe --json branch list`
// takes "branch" for the flag's value and "list" for a command of floe.
// Each client command declares the same flags itself (clientFlags), and
// its declaration wins, so the value lands in the command's own flags.
func registerGlobalClientFlags(root *cobra.Command) {
	f := &clientFlags{}
	f.register(root)
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) { fl.Hidden = true })
}

// plainBoolHelp makes help show a boolean flag as --dev, not as pflag's
// --dev[=true|false]: the marker is blanked, which keeps the columns.
func plainBoolHelp(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		out := c.OutOrStdout()
		var buf bytes.Buffer
		c.SetOut(&buf)
		help(c, args)
		c.SetOut(out)
		const marker = "[=true|false]"
		fmt.Fprint(out, strings.ReplaceAll(buf.String(), marker, strings.Repeat(" ", len(marker))))
	})
}
