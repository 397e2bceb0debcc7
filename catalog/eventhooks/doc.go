// Package eventhooks pushes the change feed to webhooks as CloudEvents, at
// least once and in order.
//
// It pushes the catalog's change feed to webhooks: each subscription (a URL,
// filters by reference, event type, namespace and table, an HMAC secret and
// the principal whose read rights bound what it receives) gets every event
// it selects as a CloudEvents 1.0 JSON request (structured mode), at least
// once and in the feed's order, so in order per branch, with retries,
// exponential backoff with jitter, and a dead-letter state an operator
// resumes from.
//
// There is no outbox table: the change feed is already the durable,
// ordered outbox (changefeed.Cursor states why), so a subscription's only
// durable state is its cursor in it, kept in a version-store record
// (state.go states the invariant). The record survives restarts and is
// shared by PostgreSQL replicas; the composition root runs delivery under
// a lease so that one replica delivers at a time.
//
// It owns the subscription configuration (config.go), the CloudEvents
// envelope and its signature (cloudevent.go), the durable delivery state
// (state.go), the selection of events (filter.go) and delivery with its
// retries and metrics (deliver.go, metrics.go). It reads the feed through
// package changefeed and asks the policy through the Decider interface.
// It must not import any rest/ package, server or assemble; nothing below
// the APIs imports it.
package eventhooks
