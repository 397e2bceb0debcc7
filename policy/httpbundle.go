package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/plugins"
	"github.com/open-policy-agent/opa/v1/plugins/rest"
)

// startHTTP sets up the downloader for BundleURL and waits, bounded by ctx
// and HTTPStartTimeout, for a first bundle to activate.
//
// The downloader runs in manual trigger mode and the engine's own loop
// triggers it: OPA's periodic mode counts its delays in whole seconds and
// owns its goroutine, while floe wants one poll interval for every source
// and polls it under sourceMu.
func (e *Engine) startHTTP(ctx context.Context) error {
	u, err := url.Parse(e.opts.BundleURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("policy: BundleURL %q is not an http(s) URL", e.opts.BundleURL)
	}
	resource := strings.TrimPrefix(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		resource += "?" + u.RawQuery
	}
	service, err := json.Marshal(map[string]any{
		"name": "floe-bundle-server",
		"url":  u.Scheme + "://" + u.Host,
	})
	if err != nil {
		return fmt.Errorf("policy: bundle service config: %w", err)
	}
	logger := opaLogger{l: e.log.With("bundle_url", e.opts.BundleURL)}
	client, err := rest.New(service, nil, rest.Logger(logger))
	if err != nil {
		return fmt.Errorf("policy: bundle server client for %s: %w", e.opts.BundleURL, err)
	}
	manual := plugins.TriggerManual
	cfg := download.Config{Trigger: &manual}
	if err := cfg.ValidateAndInjectDefaults(); err != nil {
		return fmt.Errorf("policy: bundle downloader config: %w", err)
	}
	e.downloader = download.New(cfg, client, resource).
		WithCallback(e.onDownload).
		WithBundleVerificationConfig(e.vc).
		WithBundleName(bundleName)

	timeout := time.NewTimer(e.opts.HTTPStartTimeout)
	defer timeout.Stop()
	retry := time.NewTicker(min(e.opts.PollInterval, time.Second))
	defer retry.Stop()
	for {
		// Downloads run on the engine's context so that an abandoned
		// attempt is cancelled by Close, never left running beside the
		// next one.
		attempt := make(chan struct{})
		go func() {
			defer close(attempt)
			e.pollHTTP()
		}()
		select {
		case <-attempt:
		case <-ctx.Done():
			e.cancel()
			<-attempt
			return fmt.Errorf("policy: no bundle activated from %s before start was cancelled: %w (last error: %v)",
				e.opts.BundleURL, ctx.Err(), e.lastError())
		case <-timeout.C:
			e.cancel()
			<-attempt
			return fmt.Errorf("policy: no bundle activated from %s within %s (last error: %v)",
				e.opts.BundleURL, e.opts.HTTPStartTimeout, e.lastError())
		}
		if e.active.Load() != nil {
			return nil
		}
		select {
		case <-retry.C:
		case <-ctx.Done():
			return fmt.Errorf("policy: no bundle activated from %s before start was cancelled: %w (last error: %v)",
				e.opts.BundleURL, ctx.Err(), e.lastError())
		case <-timeout.C:
			return fmt.Errorf("policy: no bundle activated from %s within %s (last error: %v)",
				e.opts.BundleURL, e.opts.HTTPStartTimeout, e.lastError())
		}
	}
}

// pollHTTP asks the bundle server for a newer bundle: a 304 for the ETag
// it holds changes nothing.
func (e *Engine) pollHTTP() {
	e.sourceMu.Lock()
	defer e.sourceMu.Unlock()
	// Errors are logged, counted and kept in lastErr by onDownload.
	_ = e.downloader.Trigger(e.ctx)
}

// reloadHTTP downloads the bundle again, ignoring the cached ETag.
func (e *Engine) reloadHTTP(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.sourceMu.Lock()
	defer e.sourceMu.Unlock()
	// SetCache("") would not do: OPA's client keeps the previous
	// If-None-Match header when given an empty value. An ETag no server
	// issued forces a full download.
	e.downloader.SetCache(`"floe-reload-` + uuid.NewString() + `"`)
	e.setLastError(nil)
	if err := e.downloader.Trigger(e.ctx); err != nil {
		return fmt.Errorf("reload bundle from %s: %w", e.opts.BundleURL, err)
	}
	return e.lastError()
}

// onDownload runs under sourceMu (the downloader calls it from Trigger),
// except for a download abandoned by Close.
// A rejected bundle keeps its ETag in the downloader, so it is not fetched
// again until the server has something new.
func (e *Engine) onDownload(ctx context.Context, u download.Update) error {
	switch {
	case u.Error != nil:
		if e.ctx.Err() != nil {
			// Cancelled by Close or a failed start: not news about the
			// bundle, and it must not hide the error that caused it.
			return nil
		}
		e.setLastError(u.Error)
		if isFetchError(u.Error) {
			e.metrics.fetchErrors.Inc()
			e.log.Warn("policy bundle download failed; keeping the active one",
				"url", e.opts.BundleURL, "active_revision", e.activeRevision(), "err", u.Error)
			return nil
		}
		// The server answered, but the bundle did not parse or verify.
		// The downloader forgets the ETag of such a bundle and fetches it
		// again on every poll: count each attempt, log the error once.
		e.countRefusal(u.Error)
		level := slog.LevelError
		if msg := u.Error.Error(); msg == e.lastRejection {
			level = slog.LevelDebug
		} else {
			e.lastRejection = msg
		}
		e.log.Log(ctx, level, "policy bundle rejected; keeping the active one",
			"url", e.opts.BundleURL, "active_revision", e.activeRevision(), "err", u.Error)
		return nil
	case u.Bundle == nil:
		return nil // 304 Not Modified
	default:
		source := e.opts.BundleURL
		if u.ETag != "" {
			source += " (etag " + u.ETag + ")"
		}
		if err := e.activate(ctx, u.Bundle, source); err != nil {
			e.setLastError(err)
			return err
		}
		e.setLastError(nil)
		e.lastRejection = ""
		return nil
	}
}

func isFetchError(err error) bool {
	var httpErr download.HTTPError
	var urlErr *url.Error
	return errors.As(err, &httpErr) || errors.As(err, &urlErr) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
