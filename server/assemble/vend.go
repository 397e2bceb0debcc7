package assemble

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// newVendors builds the STS client of every warehouse that vends
// credentials, from its plain settings (Warehouse.VendedCredentials.STS)
// and the clock now, so that Config holds no live client. A vendor
// already in given (a test's) is kept.
func newVendors(ctx context.Context, whs []icebergrest.Warehouse, given map[string]*s3vend.Vendor, now func() time.Time) (map[string]*s3vend.Vendor, error) {
	out := maps.Clone(given)
	for _, w := range whs {
		if w.VendedCredentials == nil || out[w.Name] != nil {
			continue
		}
		v, err := s3vend.New(ctx, w.VendedCredentials.STS, now)
		if err != nil {
			return nil, fmt.Errorf("warehouse %q: %w", w.Name, err)
		}
		if out == nil {
			out = map[string]*s3vend.Vendor{}
		}
		out[w.Name] = v
	}
	return out, nil
}
