package s3vend

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Grant is what one set of vended credentials may do: read, and for a
// writer also create, the objects below a table's prefixes. Nothing in a
// grant can delete.
type Grant struct {
	// Prefixes are the table's locations as s3://bucket/key (its
	// location, write.data.path, write.metadata.path), each counted only
	// when inside the warehouse; at least one.
	Prefixes []string
	// Write adds PutObject (and with it multipart uploads) below the
	// prefixes.
	Write bool
}

// MaxSessionPolicyBytes is the longest inline session policy STS takes
// (AWS: 2,048 characters, after its own packing; floe counts the bytes of
// the compact JSON it sends, which is never shorter).
const MaxSessionPolicyBytes = 2048

// ErrUnsupportedLocation is a prefix that no session policy can name
// exactly: not s3://, no bucket, no key, or a key with characters IAM
// policies treat as wildcards or variables (*, ?, $).
var ErrUnsupportedLocation = errors.New("location cannot be scoped by a session policy")

// bucketPrefix is one prefix of a grant, split.
type bucketPrefix struct{ bucket, key string }

// split parses the grant's prefixes, sorted and without duplicates, so
// that one grant always makes the same policy (the cache key).
func (g Grant) split() ([]bucketPrefix, error) {
	if len(g.Prefixes) == 0 {
		return nil, fmt.Errorf("%w: the grant names no location", ErrUnsupportedLocation)
	}
	var out []bucketPrefix
	for _, p := range g.Prefixes {
		// Split by hand: a location is not a URL to S3 ("?" and "#" are
		// characters of a key), and url.Parse would cut them off.
		scheme, rest, ok := strings.Cut(p, "://")
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %q is not an s3:// location", ErrUnsupportedLocation, p)
		case scheme == "s3", scheme == "s3a", scheme == "s3n":
		default:
			return nil, fmt.Errorf("%w: %q is not an s3:// location", ErrUnsupportedLocation, p)
		}
		host, key, _ := strings.Cut(rest, "/")
		key = strings.Trim(key, "/")
		if host == "" || key == "" {
			// A grant on a whole bucket is never a table's.
			return nil, fmt.Errorf("%w: %q names no bucket and key", ErrUnsupportedLocation, p)
		}
		if strings.ContainsAny(host+key, "*?$\x00") {
			return nil, fmt.Errorf("%w: %q contains *, ? or $, which IAM policies read as wildcards or variables", ErrUnsupportedLocation, p)
		}
		bp := bucketPrefix{bucket: host, key: key}
		if !slices.Contains(out, bp) {
			out = append(out, bp)
		}
	}
	slices.SortFunc(out, func(a, b bucketPrefix) int {
		return strings.Compare(a.bucket+"/"+a.key, b.bucket+"/"+b.key)
	})
	return out, nil
}

// statement is one statement of an IAM policy document.
type statement struct {
	Sid       string                         `json:"Sid"`
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// Actions a session policy allows or denies.
var (
	readActions  = []string{"s3:GetObject"}
	listActions  = []string{"s3:ListBucket"}
	writeActions = []string{"s3:PutObject"}
	// denied are refused explicitly, whatever the role allows: a
	// session policy only narrows the role's rights, so these are
	// already absent from what the grant allows; the deny states the
	// rule for whoever reads the policy, and holds if a later statement
	// ever widened the allows.
	deniedActions = []string{"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"}
)

// SessionPolicy is the inline session policy of the grant, compact JSON:
// GetObject on every object below the prefixes; ListBucket on each
// bucket only for listings of a prefix (the folder itself, or below it);
// PutObject below the prefixes for a writer (which covers the steps of a
// multipart upload); and a deny of DeleteObject, DeleteObjectVersion and
// AbortMultipartUpload everywhere.
func (g Grant) SessionPolicy() (string, error) {
	prefixes, err := g.split()
	if err != nil {
		return "", err
	}
	var objects, buckets []string
	listPrefixes := map[string][]string{}
	for _, p := range prefixes {
		objects = append(objects, "arn:aws:s3:::"+p.bucket+"/"+p.key+"/*")
		if !slices.Contains(buckets, p.bucket) {
			buckets = append(buckets, p.bucket)
		}
		listPrefixes[p.bucket] = append(listPrefixes[p.bucket], p.key, p.key+"/*")
	}
	stmts := []statement{{Sid: "ReadTableObjects", Effect: "Allow", Action: readActions, Resource: objects}}
	for i, b := range buckets {
		stmts = append(stmts, statement{
			Sid: fmt.Sprintf("ListTablePrefixes%d", i), Effect: "Allow", Action: listActions,
			Resource:  []string{"arn:aws:s3:::" + b},
			Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": listPrefixes[b]}},
		})
	}
	if g.Write {
		stmts = append(stmts, statement{Sid: "WriteTableObjects", Effect: "Allow", Action: writeActions, Resource: objects})
	}
	stmts = append(stmts, statement{Sid: "NeverDelete", Effect: "Deny", Action: deniedActions, Resource: []string{"arn:aws:s3:::*"}})
	doc, err := json.Marshal(struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{"2012-10-17", stmts})
	if err != nil {
		return "", err
	}
	if len(doc) > MaxSessionPolicyBytes {
		return "", fmt.Errorf("%w: the session policy of %d prefixes is %d bytes, STS takes %d at most",
			ErrUnsupportedLocation, len(prefixes), len(doc), MaxSessionPolicyBytes)
	}
	return string(doc), nil
}
