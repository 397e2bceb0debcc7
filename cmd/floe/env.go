package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix names the environment variables that stand in for flags:
// --data-dir falls back to FLOE_DATA_DIR.
const envPrefix = "FLOE_"

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// annotateEnv appends the fallback variable to each flag's help text.
func annotateEnv(flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		f.Usage += " [$" + envName(f.Name) + "]"
	})
}
