// Package backoff is the one way floe waits between retries: exponential
// delays with jitter, and a wait that ends with the caller's context.
//
// Retries happen where writers collide (the Iceberg facade's commit
// retries, PostgreSQL serialization failures) and where a remote peer
// fails (merge-check webhooks, webhook deliveries): in each, many callers
// that failed together must not retry together, so every delay is drawn
// at random from the upper half of its exponential step.
//
// The package imports only the standard library; anything may import it.
package backoff
