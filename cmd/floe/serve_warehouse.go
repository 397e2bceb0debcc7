package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// warehouseFlags say how floe reaches the warehouse named by --warehouse:
// a local directory, a file:// URL or s3://bucket/prefix with the --s3-*
// options.
type warehouseFlags struct {
	s3 icebergtable.S3Options
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
		return icebergrest.Warehouse{
			Name:         name,
			Location:     strings.TrimRight(location, "/"),
			IOProperties: s3.IOProperties(),
			ClientConfig: s3.ClientConfig(),
		}, nil
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
