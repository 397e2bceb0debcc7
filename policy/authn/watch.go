package authn

import (
	"context"
	"log/slog"
	"os"
	"time"
)

// fileStamp is what the poller compares to notice a change. Size is there
// because mtime granularity can hide a rewrite within the same tick.
type fileStamp struct {
	modTime time.Time
	size    int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{modTime: fi.ModTime(), size: fi.Size()}, nil
}

// watchFile calls load whenever path's mtime or size changes, until ctx
// ends. It polls rather than using inotify so that files replaced by
// rename (Kubernetes secrets, editors) and network filesystems behave the
// same. A failed load is logged and the caller keeps its previous state;
// the next change is tried again.
func watchFile(ctx context.Context, logger *slog.Logger, what, path string, every time.Duration, last fileStamp, load func() error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := stampOf(path)
		if err != nil {
			if last != (fileStamp{}) {
				logger.Warn("authn: cannot stat file; keeping the loaded "+what, "path", path, "err", err)
				last = fileStamp{}
			}
			continue
		}
		if st == last {
			continue
		}
		last = st
		if err := load(); err != nil {
			logger.Error("authn: reload failed; keeping the previous "+what, "path", path, "err", err)
			continue
		}
		logger.Info("authn: reloaded "+what, "path", path)
	}
}
