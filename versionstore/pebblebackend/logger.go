package pebblebackend

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger routes Pebble's printf-style logging to slog. Pebble is chatty
// at info level (WAL recycling, compactions), so info goes to Debug.
//
// Errors are rate-limited by message format: Pebble retries a failed flush
// at once and logs each failure, which on a full disk made 95,000 lines a
// minute (issue 32). A format seen within pebbleLogEvery of its last line
// is counted instead, and the count is reported with its next line.
type pebbleLogger struct {
	log   *slog.Logger
	limit *logLimiter
}

// pebbleLogEvery is the least time between two error lines of one format.
const pebbleLogEvery = 10 * time.Second

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	ok, suppressed := l.limit.allow(format)
	if !ok {
		return
	}
	if suppressed > 0 {
		l.log.Error(fmt.Sprintf(format, args...), "component", "pebble", "suppressed_repeats", suppressed)
		return
	}
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// logLimiter lets one line per key through every interval and counts the
// rest. Keys are Pebble's format strings, a small fixed set.
type logLimiter struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]*limitedKey // guarded by mu
}

type limitedKey struct {
	at         time.Time
	suppressed int
}

func newLogLimiter(every time.Duration) *logLimiter {
	return &logLimiter{every: every, now: time.Now, last: make(map[string]*limitedKey)}
}

// allow reports whether a line of key may be logged now, and how many were
// held back since the last one that was.
func (l *logLimiter) allow(key string) (bool, int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.last[key]
	if k == nil {
		l.last[key] = &limitedKey{at: now}
		return true, 0
	}
	if now.Sub(k.at) < l.every {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.at, k.suppressed = now, 0
	return true, n
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
