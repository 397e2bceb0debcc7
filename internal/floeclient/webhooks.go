package floeclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Webhook is one of the change feed's webhook subscriptions and its
// delivery state (GET /webhooks).
type Webhook struct {
	Name       string        `json:"name"`
	URL        string        `json:"url"`
	Principal  string        `json:"principal"`
	Refs       []string      `json:"refs"`
	Types      []string      `json:"types"`
	Namespaces []string      `json:"namespaces"`
	Tables     []string      `json:"tables"`
	State      *WebhookState `json:"state"`
}

// WebhookState is a subscription's durable delivery state; nil until it
// first ran.
type WebhookState struct {
	Cursor         string    `json:"cursor"`
	Status         string    `json:"status"`
	Pending        string    `json:"pending"`
	PendingType    string    `json:"pendingType"`
	PendingRef     string    `json:"pendingRef"`
	Attempts       int       `json:"attempts"`
	LastError      string    `json:"lastError"`
	LastAttempt    time.Time `json:"lastAttempt"`
	NextAttempt    time.Time `json:"nextAttempt"`
	DeadLetteredAt time.Time `json:"deadLetteredAt"`
	Delivered      uint64    `json:"delivered"`
	LastDelivered  time.Time `json:"lastDelivered"`
}

// Webhooks lists the subscriptions.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Subscriptions []Webhook `json:"subscriptions"`
	}
	if err := c.Do(ctx, http.MethodGet, "/webhooks", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out.Subscriptions, nil
}

// ResumeWebhook resumes a dead-lettered subscription, with its event or,
// with skip, after it.
func (c *Client) ResumeWebhook(ctx context.Context, name string, skip bool) (*Webhook, error) {
	var out Webhook
	if err := c.Do(ctx, http.MethodPost, "/webhooks/"+url.PathEscape(name)+"/resume", nil, map[string]bool{"skip": skip}, &out); err != nil {
		return nil, fmt.Errorf("resume webhook %s: %w", name, err)
	}
	return &out, nil
}
