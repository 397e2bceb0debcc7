package s3sign

import (
	"strings"
	"testing"
	"time"
)

func TestSignHeaders(t *testing.T) {
	s, err := NewSigner(Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	req := sr("GET", "http://127.0.0.1:9000/lake/wh/t/f?x-id=GetObject", map[string][]string{
		"Range": {"bytes=0-9"}, "amz-sdk-retry": {"0/0/500"}, "X-Amz-Checksum-Mode": {"ENABLED"}, "User-Agent": {"java"},
	})
	got, err := s.Sign(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.URI != req.URI {
		t.Errorf("uri %q, want the request's", got.URI)
	}
	auth := strings.Join(got.Headers["Authorization"], ",")
	for _, want := range []string{"AWS4-HMAC-SHA256", "Credential=AKID/20261201/eu-west-1/s3/aws4_request",
		"SignedHeaders=host;x-amz-checksum-mode;x-amz-content-sha256;x-amz-date,"} {
		if !strings.Contains(auth, want) {
			t.Errorf("Authorization %q lacks %q", auth, want)
		}
	}
	if v := got.Headers["X-Amz-Content-Sha256"]; len(v) != 1 || v[0] != UnsignedPayload {
		t.Errorf("X-Amz-Content-Sha256 = %v", v)
	}
	if v := got.Headers["X-Amz-Date"]; len(v) != 1 || v[0] != "20261201T100000Z" {
		t.Errorf("X-Amz-Date = %v", v)
	}
	if len(got.Headers) != 3 {
		t.Errorf("answer headers %v: want Authorization, X-Amz-Date and X-Amz-Content-Sha256 only", got.Headers)
	}
	if strings.Contains(auth, "secret") {
		t.Error("the secret leaked into the answer")
	}
}

// BenchmarkSign measures floe's side of one signature: SigV4 over a
// typical Java S3FileIO GET, with static credentials (cached).
func BenchmarkSign(b *testing.B) {
	s, err := NewSigner(Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Region: "us-east-1"})
	if err != nil {
		b.Fatal(err)
	}
	req := sr("GET", "http://127.0.0.1:9000/lake/wh/sales/orders-0f8e/data/00000-0-1a2b.parquet", map[string][]string{
		"Range": {"bytes=0-1048575"}, "amz-sdk-invocation-id": {"5d1c"}, "amz-sdk-request": {"attempt=1; max=4"},
		"User-Agent": {"aws-sdk-java/2.x"}, "x-amz-content-sha256": {UnsignedPayload},
	})
	ep := Endpoint{URL: "http://127.0.0.1:9000"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.Classify(req); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Sign(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signatures/s")
}
