package assemble

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
)

// DefaultLeaseTTL is Config.LeaseTTL's default. A replica that dies
// holding a lease (a merge-queue target, the GC or expiry schedule) is
// replaced within the TTL plus a third of it (the renewal and retry
// interval): 13.3 s.
const DefaultLeaseTTL = 10 * time.Second

// leadership is how this process takes turns with other replicas over a
// shared store: nil leases (Pebble, one process) runs everything here.
type leadership struct {
	leases *lease.Leases
	holder string
	ttl    time.Duration
	logger *slog.Logger
}

// newLeadership returns the leases over store when other replicas share
// it, with this process's holder name: host, pid and a random suffix, so
// a restarted process never mistakes its predecessor's lease for its own.
func newLeadership(store *versionstore.Store, shared bool, ttl time.Duration, logger *slog.Logger) *leadership {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	l := &leadership{ttl: ttl, logger: logger}
	if !shared {
		return l
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	l.leases = lease.New(store, nil)
	l.holder = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	logger.Info("shared store: background work is leased", "holder", l.holder, "lease_ttl", ttl,
		"failover_within", ttl+ttl/3, "leases", "mergequeue/<target>, gc, refretention, eventhooks")
	return l
}

// exclusive runs fn here, and over a shared store only while this
// replica holds the lease name: one replica at a time runs it, and
// another takes over if this one dies.
func (l *leadership) exclusive(ctx context.Context, name string, fn func(ctx context.Context)) {
	if l.leases == nil {
		fn(ctx)
		return
	}
	l.leases.Lead(ctx, name, l.holder, l.ttl, l.logger, fn)
}
