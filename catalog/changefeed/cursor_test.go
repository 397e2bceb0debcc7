package changefeed_test

import (
	"errors"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
)

func TestCursorWireForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, out string
		want    changefeed.Cursor
	}{
		{"", "0", changefeed.Start},
		{"0", "0", changefeed.Start},
		{"42", "42", changefeed.Cursor{Seq: 42, Index: changefeed.EndOfEntry}},
		{"42.0", "42.0", changefeed.Cursor{Seq: 42, Index: 0}},
		{"42.7", "42.7", changefeed.Cursor{Seq: 42, Index: 7}},
	} {
		got, err := changefeed.ParseCursor(tc.in)
		if err != nil || got != tc.want || got.String() != tc.out {
			t.Errorf("ParseCursor(%q) = %+v (%s), %v; want %+v (%s)", tc.in, got, got, err, tc.want, tc.out)
		}
	}
	for _, bad := range []string{"x", "-1", "1.", ".1", "1.2.3", "0.1", "1.4294967295", "18446744073709551616"} {
		if _, err := changefeed.ParseCursor(bad); !errors.Is(err, changefeed.ErrInvalidCursor) {
			t.Errorf("ParseCursor(%q): %v; want ErrInvalidCursor", bad, err)
		}
	}
	if (changefeed.Cursor{}).String() != "0" || !(changefeed.Cursor{}).Before(changefeed.Cursor{Seq: 1}) {
		t.Error("the zero cursor must be the start")
	}
	if !(changefeed.Cursor{Seq: 5, Index: 3}).Before(changefeed.Cursor{Seq: 5, Index: changefeed.EndOfEntry}) ||
		(changefeed.Cursor{Seq: 6}).Before(changefeed.Cursor{Seq: 5, Index: changefeed.EndOfEntry}) {
		t.Error("Before orders by seq, then index, the end of an entry last")
	}
}
