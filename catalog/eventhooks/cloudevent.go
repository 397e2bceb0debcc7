package eventhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
)

// CloudEvent is the envelope of one delivered event: CloudEvents 1.0 in
// its JSON format, structured content mode (the whole event is the body,
// Content-Type application/cloudevents+json).
type CloudEvent struct {
	SpecVersion string `json:"specversion"`
	// ID is the event's cursor in the change feed: unique within Source,
	// the same on every delivery of the event, and increasing along the
	// feed, so a receiver drops a redelivery by remembering the last id
	// it handled per subscription (changefeed.ParseCursor and
	// Cursor.Before compare them).
	ID     string `json:"id"`
	Source string `json:"source"`
	// Type is TypePrefix and the feed's type: "io.github.floe-catalog.table.updated".
	Type            string    `json:"type"`
	Subject         string    `json:"subject,omitempty"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	// Extension attributes, so a router need not read data: the
	// reference, its type and the commit.
	FloeRef     string `json:"floeref"`
	FloeRefType string `json:"floereftype"`
	FloeCommit  string `json:"floecommit,omitempty"`
	// Data is the event as floe's API serves it (GET /events).
	Data *changefeed.Event `json:"data"`
}

// TypePrefix is the reverse-DNS prefix of every CloudEvents type.
const TypePrefix = "io.github.floe-catalog."

// ContentType is the body's media type.
const ContentType = "application/cloudevents+json"

// envelope wraps ev. Its subject is the reference, and for an event about
// a catalog entry the reference and the entry's dotted key after a colon
// ("main:db.sales.orders").
func envelope(source string, ev *changefeed.Event) *CloudEvent {
	subject := ev.Ref
	if ev.Content != nil {
		subject += ":" + strings.Join(ev.Content.Key, ".")
	}
	return &CloudEvent{
		SpecVersion: "1.0", ID: ev.ID.String(), Source: source, Type: TypePrefix + string(ev.Type),
		Subject: subject, Time: ev.Time, DataContentType: "application/json",
		FloeRef: ev.Ref, FloeRefType: strings.ToLower(ev.RefType), FloeCommit: ev.Commit, Data: ev,
	}
}

// Headers of a delivery besides Content-Type.
const (
	// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the
	// body keyed by the subscription's secret, as the merge checks'
	// webhooks sign theirs.
	SignatureHeader = "X-Floe-Signature-256"
	// SubscriptionHeader names the subscription, AttemptHeader counts
	// the attempts at this event (1 first).
	SubscriptionHeader = "X-Floe-Subscription"
	AttemptHeader      = "X-Floe-Attempt"
)

// Sign returns the SignatureHeader value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports, in constant time, whether header is body's
// signature under secret: what a receiver checks before it trusts a
// delivery.
func VerifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}
