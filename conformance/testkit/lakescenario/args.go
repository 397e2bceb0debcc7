package lakescenario

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"
)

// Arg is the value of the command's argument key= (several values joined
// by commas); the test fails if the command has none.
func Arg(t *testing.T, td *datadriven.TestData, key string) string {
	t.Helper()
	for _, a := range td.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	td.Fatalf(t, "%s: missing argument %s=", td.Cmd, key)
	return ""
}

// OptArg is the value of the command's argument key=, or def.
func OptArg(td *datadriven.TestData, key, def string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	return def
}

// Ident is the table identifier of a dotted name, NS.NAME.
func Ident(name string) table.Identifier {
	return catalog.ToIdentifier(strings.Split(name, ".")...)
}

// Properties parses "k<sep>v,k<sep>v" ("" is none); a key without sep
// gets the empty value.
func Properties(s, sep string) iceberg.Properties {
	p := iceberg.Properties{}
	if s == "" {
		return p
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, sep)
		p[k] = v
	}
	return p
}

// DayStart is the midnight (UTC) of the command's day=YYYY-MM-DD.
func DayStart(t *testing.T, td *datadriven.TestData) time.Time {
	t.Helper()
	day, err := time.Parse(time.DateOnly, Arg(t, td, "day"))
	if err != nil {
		td.Fatalf(t, "day: %v", err)
	}
	return day
}

// DayFilter selects the rows whose ts falls on day.
func DayFilter(day time.Time) iceberg.BooleanExpression {
	ts := iceberg.Reference("ts")
	return iceberg.NewAnd(
		iceberg.GreaterThanEqual(ts, iceberg.Timestamp(day.UnixMicro())),
		iceberg.LessThan(ts, iceberg.Timestamp(day.Add(24*time.Hour).UnixMicro())))
}

// number is s, the value of the command's argument key=, as a number.
func number(t *testing.T, td *datadriven.TestData, key, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		td.Fatalf(t, "%s=%q is not a number", key, s)
	}
	return n
}
