package catalog

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/floe-catalog/floe/versionstore"
)

// Limits on names and locations, checked before anything is written so
// that an odd name is a 400 naming the limit, never a file system error.
// rest/icebergrest/README.md ("Limits on names and locations") documents them.
const (
	// maxObjectNameBytes bounds a table or view name. Its default
	// directory is "<name>-<uuid>", 37 bytes longer, and one path element
	// may hold versionstore.MaxNewKeyElementBytes (255, the usual NAME_MAX).
	maxObjectNameBytes = versionstore.MaxNewKeyElementBytes - len("-") - 36
	// maxLocationBytes bounds a location a client sends. Metadata and data
	// files go below it, so it leaves a margin under the usual PATH_MAX
	// (4096 bytes).
	maxLocationBytes = 3072
	// maxLocationElementBytes bounds one path element of a location.
	maxLocationElementBytes = versionstore.MaxNewKeyElementBytes
)

// CheckNewKey checks a namespace or table key that content is created
// under against the store's limits on new keys.
func CheckNewKey(what string, key versionstore.ContentKey) error {
	if err := key.ValidateNew(); err != nil {
		return badRequest("invalid %s %q: %v", what, trimForMessage(key.String()), err)
	}
	return nil
}

// CheckObjectName checks a table or view name against maxObjectNameBytes.
func CheckObjectName(name string) error {
	if len(name) > maxObjectNameBytes {
		return badRequest("invalid name %q: it is %d bytes, at most %d allowed", trimForMessage(name), len(name), maxObjectNameBytes)
	}
	return nil
}

// validateLocationSyntax checks a location a client sends before it is
// compared with the warehouse: it must be a valid URL (or absolute path)
// without control characters, percent-encoded or not, and within the
// length limits. "" passes when optional.
func validateLocationSyntax(what, loc string, optional bool) error {
	if loc == "" {
		if optional {
			return nil
		}
		return badRequest("invalid %s: the location is empty", what)
	}
	if len(loc) > maxLocationBytes {
		return badRequest("invalid %s: it is %d bytes, at most %d allowed", what, len(loc), maxLocationBytes)
	}
	if i := strings.IndexFunc(loc, isControl); i >= 0 {
		return badRequest("invalid %s %q: it contains a control character at byte %d", what, trimForMessage(loc), i)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return badRequest("invalid %s %q: not a valid URL: %v", what, trimForMessage(loc), err)
	}
	if i := strings.IndexFunc(u.Path, isControl); i >= 0 {
		return badRequest("invalid %s %q: it contains an encoded control character", what, trimForMessage(loc))
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) > maxLocationElementBytes {
			return badRequest("invalid %s %q: a path element is %d bytes, at most %d allowed", what, trimForMessage(loc), len(seg), maxLocationElementBytes)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// trimForMessage shortens a long name or location quoted in an error.
func trimForMessage(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:n], len(s))
}
