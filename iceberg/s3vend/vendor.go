package s3vend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/sync/singleflight"

	"github.com/floe-catalog/floe/internal/bytelru"
)

// Config says how a warehouse's credentials are vended: which role floe
// assumes, through which STS, for how long.
type Config struct {
	// RoleARN is the role assumed; its own policies bound every grant
	// (the session policy only narrows them). Required.
	RoleARN string
	// ExternalID is passed to AssumeRole when the role's trust policy
	// asks for one.
	ExternalID string
	// Endpoint is the STS API's URL, e.g. http://127.0.0.1:9000 for MinIO;
	// empty means AWS's, by Region.
	Endpoint string
	// Region is STS's signing region; empty means us-east-1.
	Region string
	// Duration is how long vended credentials last: 15 minutes to 12
	// hours (AWS's bounds; the role's maximum session duration may be
	// lower); 0 means DefaultDuration.
	Duration time.Duration
	// AccessKeyID and SecretAccessKey are the identity floe calls
	// AssumeRole with; empty means the AWS SDK's default chain
	// (environment, shared files, instance and container roles).
	AccessKeyID     string
	SecretAccessKey string
}

// Bounds of Config.Duration.
const (
	DefaultDuration = time.Hour
	MinDuration     = 15 * time.Minute
	MaxDuration     = 12 * time.Hour
)

// stsTimeout bounds one AssumeRole call.
const stsTimeout = 10 * time.Second

// ErrSTS wraps every failure of STS itself (unreachable, or refusing floe's
// AssumeRole): the caller's fault is never one.
var ErrSTS = errors.New("STS AssumeRole failed")

// Credentials are vended credentials: temporary keys and when they
// expire.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expiration      time.Time
}

// Vendor vends credentials through STS AssumeRole. It is safe for
// concurrent use.
type Vendor struct {
	cfg    Config
	client *sts.Client
	now    func() time.Time
	// cache holds what STS answered per session name and policy, reused
	// while more than half of the lifetime is left; flight makes
	// concurrent identical requests one call.
	cache  *bytelru.Cache[string, Credentials]
	flight singleflight.Group
}

// Validate reports what New would refuse in cfg, without reading the AWS
// configuration: a command line checks its flags with it.
func (cfg Config) Validate() error {
	if cfg.RoleARN == "" {
		return errors.New("vended credentials: a role ARN is required")
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return errors.New("vended credentials: an access key id needs its secret access key and the other way round")
	}
	if d := cfg.Duration; d != 0 && (d < MinDuration || d > MaxDuration) {
		return fmt.Errorf("vended credentials: duration %s is outside %s to %s", d, MinDuration, MaxDuration)
	}
	return nil
}

// New returns a vendor for cfg, which keeps time by now (nil means
// time.Now; the clock is an argument so that Config stays plain data). It
// reads the AWS configuration (for the default chain) but calls nothing:
// an unreachable STS fails the first vend, not the server's start.
func New(ctx context.Context, cfg Config, now func() time.Time) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if now == nil {
		now = time.Now
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(stsTimeout)),
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("vended credentials: loading the AWS configuration: %w", err)
	}
	client := sts.NewFromConfig(awsCfg, func(o *sts.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Vendor{cfg: cfg, client: client, now: now,
		cache: bytelru.New[string, Credentials](bytelru.Options{MaxBytes: 8 << 20, MaxEntries: 16384})}, nil
}

// Duration is how long the vendor's credentials last.
func (v *Vendor) Duration() time.Duration { return v.cfg.Duration }

// Vend returns credentials limited to g, for the session called after who
// (the principal, which STS records). Credentials vended earlier for the
// same principal and grant are handed out again while more than half of
// their lifetime is left.
func (v *Vendor) Vend(ctx context.Context, g Grant, who string) (Credentials, error) {
	policy, err := g.SessionPolicy()
	if err != nil {
		return Credentials{}, err
	}
	session := SessionName(who)
	key := session + "\x00" + policy
	if c, ok := v.cache.Get(key); ok && c.Expiration.Sub(v.now()) > v.cfg.Duration/2 {
		return c, nil
	}
	res, err, _ := v.flight.Do(key, func() (any, error) {
		// The call serves every request waiting on it: one caller going
		// away must not fail the others, and stsTimeout bounds it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stsTimeout)
		defer cancel()
		c, err := v.assumeRole(ctx, session, policy)
		if err != nil {
			return nil, err
		}
		// The stale credentials this call replaces go first: the cache
		// keeps a key's first value, and would otherwise hold them
		// until evicted, sending every later vend to STS.
		v.cache.Remove(key)
		v.cache.Add(key, c, int64(len(key)+len(c.AccessKeyID)+len(c.SecretAccessKey)+len(c.SessionToken)+64))
		return c, nil
	})
	if err != nil {
		return Credentials{}, err
	}
	return res.(Credentials), nil
}

func (v *Vendor) assumeRole(ctx context.Context, session, policy string) (Credentials, error) {
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(v.cfg.RoleARN),
		RoleSessionName: aws.String(session),
		Policy:          aws.String(policy),
		DurationSeconds: aws.Int32(int32(v.cfg.Duration / time.Second)),
	}
	if v.cfg.ExternalID != "" {
		in.ExternalId = aws.String(v.cfg.ExternalID)
	}
	out, err := v.client.AssumeRole(ctx, in)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: role %s, session %s: %w", ErrSTS, v.cfg.RoleARN, session, err)
	}
	c := out.Credentials
	if c == nil || c.AccessKeyId == nil || c.SecretAccessKey == nil || c.SessionToken == nil || c.Expiration == nil {
		return Credentials{}, fmt.Errorf("%w: role %s: the answer holds no complete credentials", ErrSTS, v.cfg.RoleARN)
	}
	return Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey, SessionToken: *c.SessionToken, Expiration: *c.Expiration}, nil
}

// SessionName is the role session name for principal who: "floe-" and the
// principal's id with every character STS refuses replaced by "_", at
// most 64 characters (STS's pattern [\w+=,.@-]{2,64}).
func SessionName(who string) string {
	var b strings.Builder
	b.WriteString("floe-")
	for _, r := range who {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_+=,.@-", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if who == "" {
		b.WriteString("anonymous")
	}
	return b.String()
}
