package icebergtable

import (
	"strconv"

	iceio "github.com/apache/iceberg-go/io"
	// The s3:// scheme for iceberg-go's io.LoadFS (gocloud.dev's S3 blob
	// driver on the AWS SDK v2).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Client-side property names that iceberg-go's io package does not define:
// Java's S3FileIO reads path style from s3.path-style-access (PyIceberg and
// iceberg-go read s3.force-virtual-addressing), and the region from
// client.region (PyIceberg and iceberg-go read s3.region). A Java client
// without client.region falls back to the AWS SDK's region chain, which
// fails on a machine with no AWS configuration: with remote signing the
// catalog's config is all an engine has.
const (
	propS3PathStyleAccess = "s3.path-style-access"
	propClientRegion      = "client.region"
)

// s3ConnectTimeout bounds dialing the object store, so an endpoint that
// drops packets fails a request instead of holding it until the client
// gives up.
const s3ConnectTimeout = "5s"

// S3Options configure an s3:// warehouse: how the catalog reaches the bucket
// to read and write metadata files, and what it tells clients that write
// data files there.
type S3Options struct {
	// Endpoint is the S3 API URL, e.g. http://127.0.0.1:9000 for MinIO;
	// empty means AWS.
	Endpoint string
	// Region is the bucket's region; empty leaves it to the AWS
	// configuration (AWS_REGION, ~/.aws/config).
	Region string
	// PathStyle addresses buckets as <endpoint>/<bucket> rather than
	// <bucket>.<endpoint>, as most S3-compatible servers need.
	PathStyle bool
	// AccessKeyID and SecretAccessKey are static credentials; without them
	// the AWS SDK's default credential chain applies (environment, shared
	// files, instance and container roles).
	AccessKeyID     string
	SecretAccessKey string
	// ClientCredentials also hands the static credentials to clients in
	// ClientConfig. Off by default: any client of the catalog could then
	// read the keys.
	ClientCredentials bool
}

// IOProperties are the iceberg-go FileIO properties (io.LoadFS) the catalog
// uses for its own metadata reads and writes (Config.IOProperties).
func (o S3Options) IOProperties() map[string]string {
	p := map[string]string{
		iceio.S3ForceVirtualAddressing: strconv.FormatBool(!o.PathStyle),
		iceio.S3ConnectTimeout:         s3ConnectTimeout,
	}
	setIf(p, iceio.S3EndpointURL, o.Endpoint)
	setIf(p, iceio.S3Region, o.Region)
	setIf(p, iceio.S3AccessKeyID, o.AccessKeyID)
	setIf(p, iceio.S3SecretAccessKey, o.SecretAccessKey)
	return p
}

// ClientConfig is what an engine (PyIceberg, Spark, Trino, iceberg-go)
// needs in its FileIO properties to write data files next to the metadata.
// Path style is given in both spellings engines read.
func (o S3Options) ClientConfig() map[string]string {
	p := map[string]string{
		propS3PathStyleAccess:          strconv.FormatBool(o.PathStyle),
		iceio.S3ForceVirtualAddressing: strconv.FormatBool(!o.PathStyle),
	}
	setIf(p, iceio.S3EndpointURL, o.Endpoint)
	setIf(p, iceio.S3Region, o.Region)
	setIf(p, propClientRegion, o.Region)
	if o.ClientCredentials {
		setIf(p, iceio.S3AccessKeyID, o.AccessKeyID)
		setIf(p, iceio.S3SecretAccessKey, o.SecretAccessKey)
	}
	return p
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
