package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3sign"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// warehouseFlags say how floe reaches the warehouse named by --warehouse:
// a local directory, a file:// URL or s3://bucket/prefix with the --s3-*
// options.
type warehouseFlags struct {
	s3 icebergtable.S3Options
	// remoteSigning is off, on-request or always (--s3-remote-signing).
	remoteSigning string
	signerURI     string
	// vended is off, on-request or always (--s3-vended-credentials);
	// sts says how they are vended (--s3-sts-*).
	vended string
	sts    s3vend.Config
}

// register adds the --s3-* flags and describes the forms --warehouse takes.
func (wf *warehouseFlags) register(f *pflag.FlagSet) {
	if w := f.Lookup("warehouse"); w != nil {
		w.Usage = "root of table data: a local directory, a file:// URL or s3://bucket/prefix"
	}
	f.StringVar(&wf.s3.Endpoint, "s3-endpoint", "", "S3 API endpoint URL for an s3:// warehouse, e.g. http://127.0.0.1:9000; empty means AWS")
	f.StringVar(&wf.s3.Region, "s3-region", "", "region of the s3:// warehouse's bucket; empty leaves it to the AWS configuration (AWS_REGION)")
	f.BoolVar(&wf.s3.PathStyle, "s3-path-style", false, "address the bucket path-style (endpoint/bucket), as MinIO and most S3-compatible servers need")
	f.StringVar(&wf.s3.AccessKeyID, "s3-access-key-id", "", "static S3 access key id; prefer the environment variable for secrets; without keys the AWS credential chain applies")
	f.StringVar(&wf.s3.SecretAccessKey, "s3-secret-access-key", "", "static S3 secret access key; prefer the environment variable, the command line is visible to other users")
	f.BoolVar(&wf.s3.ClientCredentials, "s3-client-credentials", false, "also hand the static S3 keys to Iceberg clients in table configs, so engines can write data files (every client can then read them)")
	f.StringVar(&wf.remoteSigning, "s3-remote-signing", "off", "sign engines' S3 requests with floe's credentials, scoped to one table's files and never a deletion: "+
		"off; on-request (loadTable/createTable answers carry the signing config when the client sends X-Iceberg-Access-Delegation: remote-signing); always")
	f.StringVar(&wf.signerURI, "s3-signer-uri", "", "base URI engines reach the signer at (signer.uri); empty means the catalog URI they already use")
	f.StringVar(&wf.vended, "s3-vended-credentials", "off", "vend engines short-lived S3 credentials per table (STS AssumeRole with a session policy: the table's prefixes, never a deletion, read-only unless the policy lets the principal write the table on the branch): "+
		"off; on-request (when the client sends X-Iceberg-Access-Delegation: vended-credentials, and GET .../credentials); always")
	f.StringVar(&wf.sts.RoleARN, "s3-sts-role-arn", "", "role floe assumes to vend credentials (--s3-vended-credentials); its policies bound every grant")
	f.StringVar(&wf.sts.ExternalID, "s3-sts-external-id", "", "external id AssumeRole passes, when the role's trust policy asks for one")
	f.StringVar(&wf.sts.Endpoint, "s3-sts-endpoint", "", "STS API URL, e.g. http://127.0.0.1:9000 for MinIO; empty means AWS's")
	f.StringVar(&wf.sts.Region, "s3-sts-region", "", "STS signing region; empty means --s3-region, else us-east-1")
	f.DurationVar(&wf.sts.Duration, "s3-sts-duration", s3vend.DefaultDuration, "how long vended credentials last, 15m to 12h (the role's maximum session duration may be lower)")
}

// warehouse builds the Iceberg REST warehouse called name at location, the
// server's --warehouse value.
func (wf *warehouseFlags) warehouse(name, location string) (icebergrest.Warehouse, error) {
	s3 := wf.s3
	if (s3.AccessKeyID == "") != (s3.SecretAccessKey == "") {
		return icebergrest.Warehouse{}, errors.New("--s3-access-key-id and --s3-secret-access-key go together: give both or neither")
	}
	if s3.ClientCredentials && s3.AccessKeyID == "" {
		return icebergrest.Warehouse{}, errors.New("--s3-client-credentials needs --s3-access-key-id and --s3-secret-access-key")
	}
	u, err := url.Parse(location)
	if err == nil && len(u.Scheme) > 1 && !strings.EqualFold(u.Scheme, "file") {
		switch strings.ToLower(u.Scheme) {
		case "s3", "s3a", "s3n":
		default:
			return icebergrest.Warehouse{}, fmt.Errorf("warehouse %s: unsupported scheme %q (a directory, file:// or s3://)", location, u.Scheme)
		}
		if u.Host == "" {
			return icebergrest.Warehouse{}, fmt.Errorf("warehouse %s names no bucket", location)
		}
		if s3.Endpoint != "" {
			if e, err := url.Parse(s3.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return icebergrest.Warehouse{}, fmt.Errorf("--s3-endpoint %q is not an http(s) URL", s3.Endpoint)
			}
		}
		rs, err := wf.signing()
		if err != nil {
			return icebergrest.Warehouse{}, err
		}
		vc, err := wf.vending()
		if err != nil {
			return icebergrest.Warehouse{}, err
		}
		return icebergrest.Warehouse{
			Name:              name,
			Location:          strings.TrimRight(location, "/"),
			IOProperties:      s3.IOProperties(),
			ClientConfig:      s3.ClientConfig(),
			RemoteSigning:     rs,
			VendedCredentials: vc,
		}, nil
	}
	if wf.remoteSigning != "off" || wf.signerURI != "" {
		return icebergrest.Warehouse{}, fmt.Errorf("--s3-remote-signing and --s3-signer-uri need an s3:// warehouse, not %s", location)
	}
	if wf.vended != "off" || wf.sts.RoleARN != "" || wf.sts.ExternalID != "" || wf.sts.Endpoint != "" || wf.sts.Region != "" {
		return icebergrest.Warehouse{}, fmt.Errorf("--s3-vended-credentials and the --s3-sts-* flags need an s3:// warehouse, not %s", location)
	}
	if s3 != (icebergtable.S3Options{}) {
		return icebergrest.Warehouse{}, fmt.Errorf("the --s3-* flags need an s3:// warehouse, not %s", location)
	}
	dir := location
	if err == nil && strings.EqualFold(u.Scheme, "file") {
		if u.Host != "" && u.Host != "localhost" {
			return icebergrest.Warehouse{}, fmt.Errorf("warehouse %s names a remote host; file warehouses must be local", location)
		}
		dir = filepath.FromSlash(u.Path)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return icebergrest.Warehouse{}, fmt.Errorf("warehouse directory %s: %w", dir, err)
	}
	return icebergrest.Warehouse{
		Name:     name,
		Location: (&url.URL{Scheme: "file", Path: filepath.ToSlash(root)}).String(),
	}, nil
}

// checkAllowedLocations checks the --allowed-location prefixes at startup,
// by the rule the warehouse applies (icebergtable.Config.AllowedLocations),
// so a bad one fails `floe serve` with the flag's name. A relative
// directory is made absolute.
func checkAllowedLocations(locs []string) ([]string, error) {
	out := make([]string, 0, len(locs))
	for _, loc := range locs {
		if u, err := url.Parse(loc); err == nil && u.Scheme == "" && loc != "" && !filepath.IsAbs(loc) {
			abs, err := filepath.Abs(loc)
			if err != nil {
				return nil, fmt.Errorf("--allowed-location %s: %w", loc, err)
			}
			loc = abs
		}
		if _, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "check", Location: "/", AllowedLocations: []string{loc}}); err != nil {
			return nil, fmt.Errorf("--allowed-location %q: %w", loc, err)
		}
		out = append(out, loc)
	}
	return out, nil
}

// signing is the remote signing of an s3:// warehouse, from
// --s3-remote-signing and --s3-signer-uri; nil when off.
func (wf *warehouseFlags) signing() (*icebergrest.RemoteSigning, error) {
	rs := &icebergrest.RemoteSigning{
		Credentials: s3sign.Credentials{AccessKeyID: wf.s3.AccessKeyID, SecretAccessKey: wf.s3.SecretAccessKey, Region: wf.s3.Region},
		Endpoint:    s3sign.Endpoint{URL: wf.s3.Endpoint},
		URI:         wf.signerURI,
	}
	switch wf.remoteSigning {
	case "off":
		if wf.signerURI != "" {
			return nil, errors.New("--s3-signer-uri needs --s3-remote-signing on-request or always")
		}
		return nil, nil
	case "on-request":
	case "always":
		rs.Always = true
	default:
		return nil, fmt.Errorf("--s3-remote-signing must be off, on-request or always, not %q", wf.remoteSigning)
	}
	if wf.s3.ClientCredentials {
		// Engines holding floe's keys could delete whatever signing
		// refuses.
		return nil, errors.New("--s3-remote-signing and --s3-client-credentials exclude each other: signing exists so that engines never hold floe's keys")
	}
	if wf.signerURI != "" {
		if u, err := url.Parse(wf.signerURI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--s3-signer-uri %q is not an http(s) URL", wf.signerURI)
		}
	}
	return rs, nil
}

// vending is the vending of credentials of an s3:// warehouse, from
// --s3-vended-credentials and the --s3-sts-* flags; nil when off. STS is
// called with floe's own keys (--s3-access-key-id) or the AWS credential
// chain, in --s3-region unless --s3-sts-region says otherwise.
func (wf *warehouseFlags) vending() (*icebergrest.VendedCredentials, error) {
	vc := &icebergrest.VendedCredentials{}
	switch wf.vended {
	case "off":
		if wf.sts.RoleARN != "" || wf.sts.ExternalID != "" || wf.sts.Endpoint != "" || wf.sts.Region != "" {
			return nil, errors.New("the --s3-sts-* flags need --s3-vended-credentials on-request or always")
		}
		return nil, nil
	case "on-request":
	case "always":
		vc.Always = true
	default:
		return nil, fmt.Errorf("--s3-vended-credentials must be off, on-request or always, not %q", wf.vended)
	}
	if wf.s3.ClientCredentials {
		// Engines holding floe's keys could delete what the vended
		// credentials cannot.
		return nil, errors.New("--s3-vended-credentials and --s3-client-credentials exclude each other: vended credentials exist so that engines never hold floe's keys")
	}
	if wf.sts.RoleARN == "" {
		return nil, errors.New("--s3-vended-credentials needs --s3-sts-role-arn, the role floe assumes")
	}
	if wf.sts.Endpoint != "" {
		if u, err := url.Parse(wf.sts.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--s3-sts-endpoint %q is not an http(s) URL", wf.sts.Endpoint)
		}
	}
	cfg := wf.sts
	if cfg.Region == "" {
		cfg.Region = wf.s3.Region
	}
	cfg.AccessKeyID, cfg.SecretAccessKey = wf.s3.AccessKeyID, wf.s3.SecretAccessKey
	// The STS client is built by assemble.Build from these settings; the
	// flags are checked here so that a bad one names itself.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--s3-vended-credentials: %w", err)
	}
	vc.STS = cfg
	return vc, nil
}
