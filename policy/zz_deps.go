package policy

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/lestrrat-go/jwx/v3/jwt"
	_ "github.com/open-policy-agent/opa/v1/bundle"
	_ "github.com/open-policy-agent/opa/v1/download"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/tester"
)
