package refretention

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes as a string: Go's
// notation ("48h", "90m") or whole days ("7d"). "0" and "never" are zero.
type Duration time.Duration

// ParseDuration reads Go's duration notation, whole days ("7d") or
// "never" (zero). Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	switch {
	case s == "never" || s == "0":
		return 0, nil
	case strings.HasSuffix(s, "d"):
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "d"), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: want Go's notation (48h), whole days (7d) or never", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	default:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("invalid duration %q: want Go's notation (48h), whole days (7d) or never", s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: cannot be negative", s)
	}
	return d, nil
}

// FormatDuration writes d in whole days when it is some, else in Go's
// notation without zero units ("36h", "1h30m"); zero is "0".
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	switch {
	case strings.HasSuffix(s, "h0m0s"):
		return strings.TrimSuffix(s, "0m0s")
	case strings.HasSuffix(s, "m0s"):
		return strings.TrimSuffix(s, "0s")
	}
	return s
}

func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a string in ParseDuration's notation.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"48h\" or \"7d\": %w", err)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
