package versionstore

import (
	"context"
	"fmt"
	"strings"
)

// ScanRecords returns up to limit live records whose keys start with
// prefix and sort after after (after == "" starts at the first), in key
// order, and the key to pass as after for the next page ("" when there
// is none). Expired records are skipped, as GetRecord treats them:
// absent. Maintenance locks use it to list the locks held.
func (s *Store) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]*Record, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("%w: record scan limit %d", ErrInvalid, limit)
	}
	if after < prefix {
		after = prefix
	}
	now := s.now()
	var out []*Record
	for {
		raws, err := s.be.ScanRecords(ctx, after, limit)
		if err != nil {
			return nil, "", fmt.Errorf("scan records after %q: %w", after, err)
		}
		for _, raw := range raws {
			if !strings.HasPrefix(raw.Key, prefix) {
				return out, "", nil
			}
			after = raw.Key
			r, err := decodeRecord(raw.Key, raw.Value)
			if err != nil || r.expired(now) {
				continue // garbage or expired: absent, as for GetRecord
			}
			out = append(out, r)
			if len(out) == limit {
				return out, r.Key, nil
			}
		}
		if len(raws) < limit {
			return out, "", nil
		}
	}
}
