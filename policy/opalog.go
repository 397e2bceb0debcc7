package policy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/open-policy-agent/opa/v1/logging"
)

// opaLogger adapts slog to OPA's logging interface, which the bundle
// downloader and its HTTP client log through.
type opaLogger struct {
	l *slog.Logger
}

var _ logging.Logger = opaLogger{}

func (o opaLogger) Debug(f string, a ...any) { o.log(slog.LevelDebug, f, a) }
func (o opaLogger) Info(f string, a ...any)  { o.log(slog.LevelInfo, f, a) }
func (o opaLogger) Warn(f string, a ...any)  { o.log(slog.LevelWarn, f, a) }
func (o opaLogger) Error(f string, a ...any) { o.log(slog.LevelError, f, a) }

func (o opaLogger) log(level slog.Level, f string, a []any) {
	if !o.l.Enabled(context.Background(), level) {
		return
	}
	o.l.Log(context.Background(), level, fmt.Sprintf(f, a...))
}

func (o opaLogger) WithFields(fields map[string]any) logging.Logger {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	return opaLogger{l: o.l.With(args...)}
}

// GetLevel reports the most verbose level slog would emit, so OPA skips
// building messages nobody will see.
func (o opaLogger) GetLevel() logging.Level {
	ctx := context.Background()
	switch {
	case o.l.Enabled(ctx, slog.LevelDebug):
		return logging.Debug
	case o.l.Enabled(ctx, slog.LevelInfo):
		return logging.Info
	case o.l.Enabled(ctx, slog.LevelWarn):
		return logging.Warn
	default:
		return logging.Error
	}
}

// SetLevel is a no-op: the level belongs to the slog handler floe set up.
func (o opaLogger) SetLevel(logging.Level) {}
