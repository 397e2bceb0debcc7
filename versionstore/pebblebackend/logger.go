package pebblebackend

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger routes Pebble's printf-style logging to slog. Pebble is chatty
// at info level (WAL recycling, compactions), so info goes to Debug.
type pebbleLogger struct {
	log *slog.Logger
}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf must not return: Pebble calls it on unrecoverable errors (a failed
// commit leaves its commit pipeline wedged) and carries on as if the process
// had stopped. So after recording the message in slog it hands over to
// Pebble's default logger, which exits the process.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble", "fatal", true)
	pebble.DefaultLogger.Fatalf(format, args...)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
