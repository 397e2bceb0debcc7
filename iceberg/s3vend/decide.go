package s3vend

import (
	"context"
	"net/url"
	"strings"

	"github.com/floe-catalog/floe/policy"
)

// OperationVend is the storage operation the policy sees when credentials
// are vended (input.storage.operation): not one S3 request, but every
// read (and for a writer every write) below the table's prefixes until the
// credentials expire.
const OperationVend = "vend-credentials"

// Request is what a principal asks credentials for: one table's files at
// one ref.
type Request struct {
	// Ref is the warehouse's ref, as the policy sees it.
	Ref policy.Ref
	// Branch is true when writes may land at Ref: a branch, not a tag or
	// a pinned commit.
	Branch bool
	// Table is the table's key, namespace elements then name.
	Table []string
	// TableLocation is the table's location, s3://bucket/key.
	TableLocation string
	// Prefixes are every location of the table's files (Grant.Prefixes).
	Prefixes []string
}

// Decision is what a principal gets: the grant, and when it is read-only
// though the principal asked on a branch, why.
type Decision struct {
	Grant Grant
	// ReadOnly says why writes were not granted; "" for a writer.
	ReadOnly string
}

// Ask asks the policy engine one question on behalf of the requesting
// principal: nil if allowed, an error otherwise (denied reports which
// errors are the policy's refusals; any other error is the engine's
// failure and is returned as it is).
type Ask func(ctx context.Context, in policy.Input) error

// Decide decides what credentials req gets, asking the questions remote
// signing asks of each request, once for the whole table: storage.read
// (refused: ask's error is returned and nothing may be vended), then, on
// a branch, storage.write with the table in contents (refused: the grant
// is read-only). A tag or a pinned commit is read-only without asking.
func Decide(ctx context.Context, ask Ask, denied func(error) bool, req Request) (Decision, error) {
	storage := func() *policy.StorageRequest {
		s := &policy.StorageRequest{Provider: "s3", Operation: OperationVend, Table: req.Table, TableLocation: req.TableLocation}
		if u, err := url.Parse(req.TableLocation); err == nil {
			s.Bucket, s.Key = u.Host, strings.Trim(u.Path, "/")
		}
		return s
	}
	if err := ask(ctx, policy.Input{Action: policy.ActionStorageRead, Ref: req.Ref, Storage: storage()}); err != nil {
		return Decision{}, err
	}
	d := Decision{Grant: Grant{Prefixes: req.Prefixes}}
	if !req.Branch {
		d.ReadOnly = "the ref is not a branch"
		return d, nil
	}
	err := ask(ctx, policy.Input{Action: policy.ActionStorageWrite, Ref: req.Ref, Storage: storage(),
		Contents: []policy.Content{{Key: req.Table, Type: policy.TypeTable, Change: policy.ChangeUpdate}}})
	switch {
	case err == nil:
		d.Grant.Write = true
	case denied(err):
		d.ReadOnly = "the policy does not allow writing the table's files here: " + err.Error()
	default:
		return Decision{}, err
	}
	return d, nil
}
