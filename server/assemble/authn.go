package assemble

import (
	"time"

	"github.com/floe-catalog/floe/policy/authn"
)

// Authn is authentication's plain settings: authn.Config without its
// clock, which Build takes from Deps.AuthnNow. Each field means what
// authn.Config's field of the same name does; TestAuthnMirrorsConfig
// keeps the two in step.
type Authn struct {
	TokenFile      string
	JWT            authn.JWTConfig
	OAuth          authn.OAuthConfig
	Dev            bool
	ReloadInterval time.Duration
}

// Config maps the settings to authentication's configuration, with the
// clock now (nil is time.Now).
func (a Authn) Config(now func() time.Time) authn.Config {
	return authn.Config{TokenFile: a.TokenFile, JWT: a.JWT, OAuth: a.OAuth, Dev: a.Dev, ReloadInterval: a.ReloadInterval, Now: now}
}
