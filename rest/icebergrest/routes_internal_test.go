package icebergrest

import (
	"slices"
	"testing"
)

// TestRegistrationOrder: every endpoint is registered once, the hot ones
// first and in their order; a hot route that names no endpoint (a
// template renamed in routeTable only) fails here rather than silently
// falling back to table order.
func TestRegistrationOrder(t *testing.T) {
	order := registrationOrder()
	if len(order) != len(routeTable) {
		t.Fatalf("%d routes registered, %d in the table", len(order), len(routeTable))
	}
	var got []string
	for _, rt := range order {
		got = append(got, rt.method+" "+rt.template)
	}
	if !slices.Equal(got[:len(hotRoutes)], hotRoutes) {
		t.Errorf("registered first: %q, want %q", got[:len(hotRoutes)], hotRoutes)
	}
	want := Endpoints()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered %q, want each endpoint once: %q", got, want)
	}
}
