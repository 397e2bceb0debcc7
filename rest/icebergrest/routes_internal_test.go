package icebergrest

import (
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/gorilla/mux"
)

// TestNoPathMatchesTwoTemplates: the facade's routes are registered in
// table order, which decides nothing only while no path matches two of
// their templates (nor the token endpoint's, which floe serve registers
// before them). Each template, its variables filled in, matches itself
// alone. The events route (events.go) is registered after them.
func TestNoPathMatchesTwoTemplates(t *testing.T) {
	t.Parallel()
	templates := []string{"/v1/config", legacySignPath, "/v1/oauth/tokens", eventsRoute.template}
	seen := map[string]bool{}
	for _, rt := range routeTable {
		if !seen[rt.template] {
			seen[rt.template] = true
			templates = append(templates, rt.template)
		}
	}
	variable := regexp.MustCompile(`\{[^}]+\}`)
	for _, a := range templates {
		path := variable.ReplaceAllString(a, "x")
		for _, b := range templates {
			route := mux.NewRouter().UseEncodedPath().Path(b)
			if matched := route.Match(httptest.NewRequest("GET", path, nil), &mux.RouteMatch{}); matched != (a == b) {
				t.Errorf("%s (from %s) matches %s: %v", path, a, b, matched)
			}
		}
	}
}
