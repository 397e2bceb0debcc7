package s3sign

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// UnsignedPayload is the payload hash of a request whose body is not
// signed: floe never sees the bodies it signs for.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// Credentials are floe's own: whose rights every signature carries.
type Credentials struct {
	// AccessKeyID and SecretAccessKey are static keys; empty means the
	// AWS SDK's default chain (environment, shared files, instance and
	// container roles), refreshed as it expires.
	AccessKeyID     string
	SecretAccessKey string
	// Region signs requests whose sign request names none, and every
	// request when set, since the signature's scope must be the
	// bucket's region whatever the client thought it was.
	Region string
}

// Signer signs S3 requests with floe's credentials. It is safe for
// concurrent use.
type Signer struct {
	creds  aws.CredentialsProvider
	region string
	v4     *v4.Signer
	now    func() time.Time
}

// NewSigner returns a signer with c. Credentials of the default chain are
// looked up on first use, so an unreachable metadata service fails sign
// requests, not the server's start.
func NewSigner(c Credentials) (*Signer, error) {
	var provider aws.CredentialsProvider
	if c.AccessKeyID != "" || c.SecretAccessKey != "" {
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, errors.New("s3 signer: an access key id needs its secret access key and the other way round")
		}
		provider = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")
	} else {
		provider = defaultChain{}
	}
	return &Signer{
		creds:  aws.NewCredentialsCache(provider),
		region: c.Region,
		// S3 signs the path as sent, escaped once: the key's own
		// encoding is what the store sees.
		v4:  v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
		now: time.Now,
	}, nil
}

// Signed is the spec's RemoteSignResult: the URI to send the request to
// and the headers the signature adds to the request (Authorization,
// X-Amz-Date, X-Amz-Content-Sha256 unless the client sent it,
// X-Amz-Security-Token with temporary credentials). The client's own
// headers are not echoed: Java clients put theirs back over the answer,
// but PyIceberg adds the answer's to its own, and a header sent twice
// would no longer match its signature.
type Signed struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

// Sign signs req, which Classify accepted. Only the request's host and
// its x-amz-* and Content-MD5 headers are signed, which is what S3
// requires: other headers (Range, User-Agent, the SDKs' retry counters,
// Content-Length) are handed back unsigned, since transports change them
// between signing and sending, and clients reuse a read's signature for
// other ranges of the same object.
func (s *Signer) Sign(ctx context.Context, req *Request) (*Signed, error) {
	u, err := url.Parse(req.URI)
	if err != nil {
		return nil, fmt.Errorf("sign %s %s: %w", req.Method, req.URI, err)
	}
	hr := &http.Request{Method: req.Method, URL: u, Host: u.Host, Header: http.Header{}}
	payload, clientPayload := UnsignedPayload, false
	for name, values := range req.Headers {
		lower := strings.ToLower(name)
		switch {
		case lower == "x-amz-content-sha256":
			if len(values) > 0 && values[0] != "" {
				payload, clientPayload = values[0], true
			}
		case lower == "authorization" || lower == "x-amz-date" || lower == "x-amz-security-token" || lower == "host":
			// The signature sets these (the host from the URI).
		case strings.HasPrefix(lower, "x-amz-") || lower == "content-md5":
			for _, v := range values {
				hr.Header.Add(name, v)
			}
		}
	}
	hr.Header.Set("X-Amz-Content-Sha256", payload)
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("sign %s %s: floe's S3 credentials: %w", req.Method, u.Redacted(), err)
	}
	region := s.region
	if region == "" {
		region = req.Region
	}
	if region == "" {
		region = "us-east-1"
	}
	if err := s.v4.SignHTTP(ctx, creds, hr, payload, "s3", region, s.now().UTC()); err != nil {
		return nil, fmt.Errorf("sign %s %s: %w", req.Method, u.Redacted(), err)
	}
	out := &Signed{URI: req.URI, Headers: make(map[string][]string, 4)}
	for _, name := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := hr.Header.Values(name); len(v) > 0 {
			out.Headers[name] = v
		}
	}
	if !clientPayload {
		out.Headers["X-Amz-Content-Sha256"] = []string{payload}
	}
	return out, nil
}

// defaultChain resolves the AWS SDK's default credential chain on each
// retrieval; the credentials cache in front of it asks again only as the
// credentials expire.
type defaultChain struct{}

func (defaultChain) Retrieve(ctx context.Context) (aws.Credentials, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return aws.Credentials{}, errors.New("no AWS credentials: set static keys or configure the AWS credential chain")
	}
	return cfg.Credentials.Retrieve(ctx)
}
