package floeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Event is one change-feed event as the CLI prints it: the fields every
// event has, what the kind adds, and the whole object as the server sent
// it (for --json).
type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Ref       string    `json:"ref"`
	RefType   string    `json:"refType"`
	Commit    string    `json:"commit"`
	Principal string    `json:"principal"`
	Time      time.Time `json:"time"`
	Move      *struct {
		From        string `json:"from"`
		To          string `json:"to"`
		FastForward bool   `json:"fastForward"`
		Reason      string `json:"reason"`
	} `json:"move"`
	CommitDetails *struct {
		Message   string     `json:"message"`
		Source    string     `json:"source"`
		Operation string     `json:"operation"`
		Keys      [][]string `json:"keys"`
	} `json:"commitDetails"`
	Content *struct {
		Key         []string `json:"key"`
		PreviousKey []string `json:"previousKey"`
		Via         string   `json:"via"`
		Iceberg     *struct {
			Operation  string            `json:"operation"`
			SnapshotID int64             `json:"snapshotId"`
			Summary    map[string]string `json:"summary"`
		} `json:"iceberg"`
	} `json:"content"`

	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw object beside the fields.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// EventQuery selects a page of the change feed.
type EventQuery struct {
	After string // a cursor, "now", or "" for the beginning
	Refs  []string
	Types []string
	Limit int
	// Wait, if positive, long-polls: the server answers once it has an
	// event, or after Wait with none.
	Wait time.Duration
}

// EventPage is one page of the change feed.
type EventPage struct {
	Events []Event `json:"events"`
	Next   string  `json:"next"`
}

// Events reads one page of the change feed (GET /events). The client's
// timeout must exceed q.Wait.
func (c *Client) Events(ctx context.Context, q EventQuery) (*EventPage, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	for _, r := range q.Refs {
		v.Add("ref", r)
	}
	for _, t := range q.Types {
		v.Add("types", t)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Wait > 0 {
		v.Set("wait", q.Wait.String())
	}
	var page EventPage
	if err := c.Do(ctx, "GET", "/events", v, nil, &page); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return &page, nil
}
