package authn

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/floe-catalog/floe/policy"
)

// maxFileSize bounds the token, clients and JWKS files read from disk.
const maxFileSize = 4 << 20

// HashSecret is the hex SHA-256 of a token or client secret: the form the
// token and clients files store.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token: 32 bytes from crypto/rand,
// base64url without padding, so it never contains the dots of a JWT.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// staticToken is one entry of the token file.
type staticToken struct {
	hash      [sha256.Size]byte
	principal policy.Principal
}

// staticTokens is the parsed token file; it is replaced whole on reload,
// never mutated.
type staticTokens []staticToken

type tokenFile struct {
	Tokens []struct {
		SHA256    string   `json:"sha256"`
		Principal string   `json:"principal"`
		Groups    []string `json:"groups"`
	} `json:"tokens"`
}

func loadTokenFile(path string) (staticTokens, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	var f tokenFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	out := make(staticTokens, 0, len(f.Tokens))
	for i, t := range f.Tokens {
		h, err := parseHash(t.SHA256)
		if err != nil {
			return nil, fmt.Errorf("token file %s: tokens[%d]: %w", path, i, err)
		}
		if t.Principal == "" {
			return nil, fmt.Errorf("token file %s: tokens[%d]: principal is empty", path, i)
		}
		if slices.ContainsFunc(out, func(s staticToken) bool { return s.hash == h }) {
			return nil, fmt.Errorf("token file %s: tokens[%d]: the same token hash appears twice", path, i)
		}
		out = append(out, staticToken{hash: h, principal: policy.Principal{ID: t.Principal, Groups: nonNil(t.Groups)}})
	}
	return out, nil
}

// lookup finds the token whose hash is h. It compares against every entry
// in constant time and without an early exit, so response timing says
// nothing about how close a guess came or which entry matched.
func (s staticTokens) lookup(h [sha256.Size]byte) (policy.Principal, bool) {
	found := -1
	for i := range s {
		if subtle.ConstantTimeCompare(s[i].hash[:], h[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return policy.Principal{}, false
	}
	p := s[found].principal
	// The caller owns what it gets; the table is shared by all requests.
	p.Groups = slices.Clone(p.Groups)
	return p, true
}

func parseHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return h, fmt.Errorf("sha256 must be 64 hex digits (use `floe auth hash-token`)")
	}
	copy(h[:], b)
	return h, nil
}

func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// decodeStrict rejects unknown fields so that a misspelt key ("sha-256")
// fails loudly instead of leaving a token that never matches.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
