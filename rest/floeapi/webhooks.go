package floeapi

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// The change feed's webhook subscriptions (package eventhooks): their
// delivery state, read from the store so that every replica answers the
// same, and the resume of a dead-lettered one.

// Actions on webhook subscriptions.
const (
	ActionWebhooksRead   policy.Action = "admin.webhooks.read"
	ActionWebhooksResume policy.Action = "admin.webhooks.resume"
)

// WebhookList is the answer of GET /webhooks.
type WebhookList struct {
	Subscriptions []eventhooks.Status `json:"subscriptions"`
}

// ResumeWebhookRequest is the optional body of POST
// /webhooks/{name}/resume.
type ResumeWebhookRequest struct {
	// Skip resumes after the dead-lettered event instead of with it.
	Skip bool `json:"skip"`
}

func (a *API) webhookRoutes() []route {
	return []route{
		{http.MethodGet, "/webhooks", a.listWebhooks},
		{http.MethodGet, "/webhooks/{name}", a.getWebhook},
		{http.MethodPost, "/webhooks/{name}/resume", a.resumeWebhook},
	}
}

func (a *API) listWebhooks(r *http.Request) (any, error) {
	if a.webhooks == nil {
		return nil, notConfigured("event webhooks")
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionWebhooksRead}); err != nil {
		return nil, err
	}
	subs, err := a.webhooks.Statuses(r.Context())
	if err != nil {
		return nil, err
	}
	return WebhookList{Subscriptions: subs}, nil
}

func (a *API) getWebhook(r *http.Request) (any, error) {
	if a.webhooks == nil {
		return nil, notConfigured("event webhooks")
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionWebhooksRead}); err != nil {
		return nil, err
	}
	st, err := a.webhooks.Status(r.Context(), mux.Vars(r)["name"])
	return st, webhookError(err)
}

func (a *API) resumeWebhook(r *http.Request) (any, error) {
	if a.webhooks == nil {
		return nil, notConfigured("event webhooks")
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionWebhooksResume}); err != nil {
		return nil, err
	}
	var body ResumeWebhookRequest
	if r.ContentLength != 0 {
		if err := decode(r, &body); err != nil {
			return nil, err
		}
	}
	st, err := a.webhooks.Resume(r.Context(), mux.Vars(r)["name"], body.Skip, a.principal(r))
	return st, webhookError(err)
}

func webhookError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, eventhooks.ErrUnknownSubscription):
		return notFound("%v", err)
	case errors.Is(err, eventhooks.ErrNotDeadLettered), errors.Is(err, versionstore.ErrRecordConflict):
		return conflict(nil, "%v", err)
	}
	return err
}
