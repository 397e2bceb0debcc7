package floeclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDoDecodesTheErrorModel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("authorization header %q", r.Header.Get("Authorization"))
		}
		switch r.URL.Path {
		case "/api/floe/v1/ok":
			_, _ = w.Write([]byte(`{"n": 3}`))
		case "/api/floe/v1/refused":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error": {"status": 409, "code": "CONFLICT", "message": "held by job-7", "details": {"holder": "job-7"}}}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("proxy down"))
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out struct{ N int }
	if err := c.Do(ctx, http.MethodGet, "/ok", nil, nil, &out); err != nil || out.N != 3 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	err = c.Do(ctx, http.MethodPost, "/refused", nil, map[string]string{"a": "b"}, nil)
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Status != 409 || e.Code != "CONFLICT" || e.Message != "held by job-7" || string(e.Details) != `{"holder": "job-7"}` {
		t.Fatalf("refused: %v (%#v)", err, e)
	}
	err = c.Do(ctx, http.MethodGet, "/other", nil, nil, nil)
	if e, ok := errors.AsType[*Error](err); !ok || e.Status != http.StatusBadGateway || e.Code != "" {
		t.Fatalf("non-model answer: %v", err)
	}
}
