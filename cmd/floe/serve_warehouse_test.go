package main

import (
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/rest/icebergrest"
)

// parseWarehouseFlags registers the warehouse flags on a fresh flag set,
// parses args, applies the FLOE_* environment and builds the warehouse.
func parseWarehouseFlags(t *testing.T, args ...string) (icebergrest.Warehouse, error) {
	t.Helper()
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	warehouse := "./warehouse"
	f.StringVar(&warehouse, "warehouse", warehouse, "root directory for table data")
	wf := &warehouseFlags{}
	wf.register(f)
	if err := f.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	var err error
	f.VisitAll(func(fl *pflag.Flag) { err = errors.Join(err, envFallback(fl)) })
	if err != nil {
		t.Fatal(err)
	}
	return wf.warehouse("lake", warehouse)
}

func TestWarehouseFlags(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		wantLoc    string
		wantIO     map[string]string
		wantClient map[string]string
	}{
		{
			name:    "relative directory",
			args:    []string{"--warehouse", "wh"},
			wantLoc: "file://" + filepath.ToSlash(filepath.Join(cwd, "wh")),
		},
		{
			name:    "file URL",
			args:    []string{"--warehouse", "file://" + filepath.ToSlash(dir) + "/lake"},
			wantLoc: "file://" + filepath.ToSlash(dir) + "/lake",
		},
		{
			name:    "s3 on AWS with the default credential chain",
			args:    []string{"--warehouse", "s3://bucket/prefix/", "--s3-region", "eu-west-1"},
			wantLoc: "s3://bucket/prefix",
			wantIO: map[string]string{
				"s3.region": "eu-west-1", "s3.force-virtual-addressing": "true", "s3.connect-timeout": "5s",
			},
			wantClient: map[string]string{
				"s3.region": "eu-west-1", "client.region": "eu-west-1", "s3.path-style-access": "false", "s3.force-virtual-addressing": "true",
			},
		},
		{
			name:    "s3-compatible server, keys from the environment, kept from clients",
			args:    []string{"--warehouse", "s3://b/wh", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-path-style"},
			env:     map[string]string{"FLOE_S3_ACCESS_KEY_ID": "AK", "FLOE_S3_SECRET_ACCESS_KEY": "SK", "FLOE_S3_REGION": "us-east-1"},
			wantLoc: "s3://b/wh",
			wantIO: map[string]string{
				"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1", "s3.force-virtual-addressing": "false",
				"s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.connect-timeout": "5s",
			},
			wantClient: map[string]string{
				"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1", "client.region": "us-east-1",
				"s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
			},
		},
		{
			name: "client credentials handed out",
			args: []string{"--warehouse", "s3://b/wh", "--s3-endpoint", "https://s3.example", "--s3-path-style",
				"--s3-access-key-id", "AK", "--s3-secret-access-key", "SK", "--s3-client-credentials"},
			wantLoc: "s3://b/wh",
			wantIO: map[string]string{
				"s3.endpoint": "https://s3.example", "s3.force-virtual-addressing": "false",
				"s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.connect-timeout": "5s",
			},
			wantClient: map[string]string{
				"s3.endpoint": "https://s3.example", "s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
				"s3.access-key-id": "AK", "s3.secret-access-key": "SK",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			wh, err := parseWarehouseFlags(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if wh.Name != "lake" || wh.Location != tc.wantLoc {
				t.Errorf("warehouse %s at %s, want lake at %s", wh.Name, wh.Location, tc.wantLoc)
			}
			if !maps.Equal(wh.IOProperties, tc.wantIO) {
				t.Errorf("IO properties %v, want %v", wh.IOProperties, tc.wantIO)
			}
			if !maps.Equal(wh.ClientConfig, tc.wantClient) {
				t.Errorf("client config %v, want %v", wh.ClientConfig, tc.wantClient)
			}
		})
	}
}

func TestWarehouseFlagsRefuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--warehouse", "s3://b/wh", "--s3-access-key-id", "AK"}, "give both or neither"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-secret-access-key", "SK"}, "give both or neither"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-client-credentials"}, "--s3-client-credentials needs"},
		{[]string{"--warehouse", "/srv/lake", "--s3-region", "us-east-1"}, "need an s3:// warehouse"},
		{[]string{"--warehouse", "s3:///wh"}, "names no bucket"},
		{[]string{"--warehouse", "gs://b/wh"}, `unsupported scheme "gs"`},
		{[]string{"--warehouse", "file://host/wh"}, "remote host"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-endpoint", "127.0.0.1:9000"}, "is not an http(s) URL"},
	} {
		_, err := parseWarehouseFlags(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestServeS3Warehouse runs the binary with an s3:// warehouse whose
// endpoint does not answer: the server starts (nothing touches S3 until a
// table is written), makes no local directory for the URL, and a table
// write fails with the cause in the Iceberg error model.
func TestServeS3Warehouse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{"FLOE_S3_ACCESS_KEY_ID=test", "FLOE_S3_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"},
		"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--drain-delay", "0s",
		"--warehouse", "s3://bucket/wh", "--s3-endpoint", endpoint, "--s3-region", "us-east-1", "--s3-path-style")
	base := "http://" + p.addr
	if code := getStatus(t, base+"/v1/config?warehouse=lake"); code != http.StatusOK {
		t.Fatalf("/v1/config: %d", code)
	}
	post := func(path, body string) (int, string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/v1/lake/namespaces", `{"namespace":["ns"]}`); code != http.StatusOK {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	code, body := post("/v1/lake/namespaces/ns/tables", `{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`)
	if code != http.StatusInternalServerError || !strings.Contains(body, "write metadata file s3://bucket/wh/ns/t-") ||
		!strings.Contains(body, "the object store is unreachable") {
		t.Fatalf("create table on an unreachable store: %d %s", code, body)
	}
	if _, err := os.Stat("s3:"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a local directory was made for the s3:// warehouse: %v", err)
	}
	if code, lines := p.interrupt(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, strings.Join(lines, "\n"))
	}
}

func TestCheckAllowedLocations(t *testing.T) {
	dir := t.TempDir()
	got, err := checkAllowedLocations([]string{dir, "file:///tmp/x", "s3://b/p"})
	if err != nil || len(got) != 3 || got[0] != dir {
		t.Fatalf("checkAllowedLocations = %v, %v", got, err)
	}
	for _, loc := range []string{"/", "file:/", "file:///", "gs://b/p", "s3:///p", "/a/../b", "file://host/x"} {
		if _, err := checkAllowedLocations([]string{loc}); err == nil || !strings.Contains(err.Error(), "--allowed-location") {
			t.Errorf("checkAllowedLocations(%q) = %v, want a refusal naming the flag", loc, err)
		}
	}
}

func TestRemoteSigningFlags(t *testing.T) {
	wh, err := parseWarehouseFlags(t, "--warehouse", "s3://b/wh", "--s3-endpoint", "http://127.0.0.1:9000",
		"--s3-access-key-id", "k", "--s3-secret-access-key", "s", "--s3-region", "r", "--s3-remote-signing", "always")
	if err != nil {
		t.Fatal(err)
	}
	rs := wh.RemoteSigning
	if rs == nil || !rs.Always || rs.Endpoint.URL != "http://127.0.0.1:9000" || rs.Credentials.AccessKeyID != "k" || rs.Credentials.Region != "r" {
		t.Fatalf("remote signing %+v", rs)
	}
	if wh, err = parseWarehouseFlags(t, "--warehouse", "s3://b/wh", "--s3-remote-signing", "on-request"); err != nil || wh.RemoteSigning == nil || wh.RemoteSigning.Always {
		t.Fatalf("on-request: %+v, %v", wh.RemoteSigning, err)
	}
	if wh, err = parseWarehouseFlags(t, "--warehouse", "s3://b/wh"); err != nil || wh.RemoteSigning != nil {
		t.Fatalf("default: %+v, %v; want off", wh.RemoteSigning, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--warehouse", "s3://b/wh", "--s3-remote-signing", "sometimes"}, "must be off, on-request or always"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-access-key-id", "k", "--s3-secret-access-key", "s", "--s3-client-credentials", "--s3-remote-signing", "always"}, "exclude each other"},
		{[]string{"--warehouse", "/tmp/wh", "--s3-remote-signing", "always"}, "need an s3:// warehouse"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-signer-uri", "http://h"}, "needs --s3-remote-signing"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-remote-signing", "always", "--s3-signer-uri", "ftp://h"}, "not an http(s) URL"},
	} {
		if _, err := parseWarehouseFlags(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestVendedCredentialsFlags(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	wh, err := parseWarehouseFlags(t, "--warehouse", "s3://b/wh", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-region", "eu-west-1",
		"--s3-vended-credentials", "always", "--s3-sts-role-arn", "arn:aws:iam::1:role/r", "--s3-sts-endpoint", "http://127.0.0.1:9000", "--s3-sts-duration", "30m")
	if err != nil {
		t.Fatal(err)
	}
	vc := wh.VendedCredentials
	if vc == nil || !vc.Always || vc.STS.RoleARN != "arn:aws:iam::1:role/r" || vc.STS.Region != "eu-west-1" || vc.STS.Duration != 30*time.Minute {
		t.Fatalf("vended credentials %+v", vc)
	}
	if wh, err = parseWarehouseFlags(t, "--warehouse", "s3://b/wh", "--s3-vended-credentials", "on-request", "--s3-sts-role-arn", "arn:aws:iam::1:role/r"); err != nil ||
		wh.VendedCredentials == nil || wh.VendedCredentials.Always || wh.VendedCredentials.STS.Duration != time.Hour {
		t.Fatalf("on-request: %+v, %v", wh.VendedCredentials, err)
	}
	if wh, err = parseWarehouseFlags(t, "--warehouse", "s3://b/wh"); err != nil || wh.VendedCredentials != nil {
		t.Fatalf("default: %+v, %v; want off", wh.VendedCredentials, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--warehouse", "s3://b/wh", "--s3-vended-credentials", "sometimes", "--s3-sts-role-arn", "r"}, "must be off, on-request or always"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-vended-credentials", "always"}, "needs --s3-sts-role-arn"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-sts-role-arn", "r"}, "need --s3-vended-credentials"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-vended-credentials", "always", "--s3-sts-role-arn", "r", "--s3-sts-duration", "5m"}, "outside 15m0s to 12h0m0s"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-vended-credentials", "always", "--s3-sts-role-arn", "r", "--s3-sts-endpoint", "127.0.0.1:9000"}, "not an http(s) URL"},
		{[]string{"--warehouse", "s3://b/wh", "--s3-access-key-id", "k", "--s3-secret-access-key", "s", "--s3-client-credentials",
			"--s3-vended-credentials", "always", "--s3-sts-role-arn", "r"}, "exclude each other"},
		{[]string{"--warehouse", "/tmp/wh", "--s3-vended-credentials", "always", "--s3-sts-role-arn", "r"}, "need an s3:// warehouse"},
	} {
		if _, err := parseWarehouseFlags(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestVendedCredentialsConfigFile: the settings of vended credentials sit
// in the config file under s3, as deploy/floe.yaml shows.
func TestVendedCredentialsConfigFile(t *testing.T) {
	path := writeConfig(t, `
warehouse: s3://b/wh
s3:
  region: eu-west-1
  vended-credentials: on-request
  sts:
    role-arn: arn:aws:iam::1:role/floe-vend
    external-id: ext-1
    endpoint: https://sts.eu-west-1.amazonaws.com
    region: eu-west-1
    duration: 2h
`)
	cfg, text, err := printConfig(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	// --print-config writes them back one level deep (s3: sts-role-arn).
	s3 := group(t, cfg, "s3")
	if s3["vended-credentials"] != "on-request" || s3["sts-role-arn"] != "arn:aws:iam::1:role/floe-vend" || s3["sts-external-id"] != "ext-1" ||
		s3["sts-endpoint"] != "https://sts.eu-west-1.amazonaws.com" || s3["sts-region"] != "eu-west-1" || s3["sts-duration"] != "2h0m0s" {
		t.Errorf("the file's vending settings did not take:\n%s", text)
	}
}
