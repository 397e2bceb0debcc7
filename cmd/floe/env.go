package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix names the environment variables that stand in for flags:
// --data-dir falls back to FLOE_DATA_DIR.
const envPrefix = "FLOE_"

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its FLOE_*
// variable, if that is set. The command line wins over the environment,
// which wins over the default.
func applyEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := envName(f.Name)
		v, ok := os.LookupEnv(name)
		if !ok {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = fmt.Errorf("invalid %s=%q: %w", name, v, serr)
		}
	})
	return err
}

// annotateEnv appends the fallback variable to each flag's help text.
func annotateEnv(flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		f.Usage += " [$" + envName(f.Name) + "]"
	})
}
