package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runFloeStdin runs the CLI with stdin and returns stdout, stderr and the
// exit code.
func runFloeStdin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(floeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("floe %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestAuthHashToken(t *testing.T) {
	tests := []struct {
		name, stdin string
		want        string // "" = must fail
	}{
		{"with newline", "s3cret\n", sha256Hex("s3cret")},
		{"without newline", "s3cret", sha256Hex("s3cret")},
		{"crlf", "s3cret\r\n", sha256Hex("s3cret")},
		{"only the first line", "s3cret\nother\n", sha256Hex("s3cret")},
		{"empty", "", ""},
		{"blank line", "\n", ""},
		{"trailing space", "s3cret \n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"auth", "hash-token"}
			out, errOut, code := runFloeStdin(t, tc.stdin, args...)
			if tc.want == "" {
				checkFailure(t, args, errOut, code, "token")
				return
			}
			if code != 0 || out != tc.want+"\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errOut, tc.want)
			}
		})
	}
}

func TestAuthNewToken(t *testing.T) {
	out, errOut, code := runFloeStdin(t, "", "auth", "new-token")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want token and hash on two lines, got %q", out)
	}
	token, hash := lines[0], lines[1]
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		t.Errorf("token %q is not 32 bytes of base64url: %v", token, err)
	}
	if hash != sha256Hex(token) {
		t.Errorf("hash %s is not sha256(token)", hash)
	}
	// The printed hash is what hash-token gives for the token.
	if again, _, _ := runFloeStdin(t, token+"\n", "auth", "hash-token"); again != hash+"\n" {
		t.Errorf("hash-token gives %q, new-token printed %q", again, hash)
	}
	if out2, _, _ := runFloeStdin(t, "", "auth", "new-token"); out2 == out {
		t.Error("two runs printed the same token")
	}
}
