package feedtest

import (
	"context"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
)

// ReadAll reads every event of feed after a cursor, page by page, until a
// page no longer moves the cursor; a read error fails t.
func ReadAll(t testing.TB, feed *changefeed.Feed, after changefeed.Cursor) []changefeed.Event {
	t.Helper()
	var out []changefeed.Event
	for {
		page, err := feed.Read(context.Background(), changefeed.Query{After: after, Limit: changefeed.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		if page.Next == after {
			return out
		}
		after = page.Next
	}
}
