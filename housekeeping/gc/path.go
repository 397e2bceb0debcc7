package gc

import (
	"path"
	"strings"
)

// canonical is the form every file location is compared in: the same
// file named by a manifest ("file:/srv/lake/t/data/f.parquet" as Java
// writes it, "file:///srv/...", a bare "/srv/...", "s3a://b/k") and by a
// warehouse listing gets one key. Locations are not percent-decoded: a
// Java writer's "part=a%20b" is a file or key named with "%20".
func canonical(loc string) string {
	switch {
	case strings.HasPrefix(loc, "file:"):
		p := strings.TrimPrefix(loc, "file:")
		if rest, ok := strings.CutPrefix(p, "//localhost/"); ok {
			p = "/" + rest
		} else if strings.HasPrefix(p, "///") {
			p = p[2:]
		}
		return "file://" + path.Clean(p)
	case strings.HasPrefix(loc, "/"):
		return "file://" + path.Clean(loc)
	case strings.HasPrefix(loc, "s3a://"), strings.HasPrefix(loc, "s3n://"):
		return "s3://" + loc[len("s3a://"):]
	}
	return loc
}

// parentDirs calls fn with each directory above loc (canonical), the
// innermost first, until fn returns true.
func parentDirs(loc string, fn func(dir string) bool) {
	for {
		i := strings.LastIndexByte(loc, '/')
		if i <= len("s3://") {
			return
		}
		loc = loc[:i]
		if fn(loc) {
			return
		}
	}
}
