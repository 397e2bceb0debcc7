package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-catalog/floe/policy/authn"
)

// maxSecretLen bounds what hash-token reads; tokens and secrets are short.
const maxSecretLen = 16 << 10

// newAuthCommand builds `floe auth`: offline helpers for writing the token
// and OAuth clients files, which hold only SHA-256 hashes.
func newAuthCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Make tokens and hashes for the token and OAuth clients files",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "hash-token",
		Short: "Read a token or client secret on stdin and print its sha256 hex",
		Long: "hash-token reads one token or OAuth client secret from stdin (one line; the\n" +
			"trailing newline is not part of it) and prints the hex SHA-256 to put in the\n" +
			"token file's \"sha256\" or the clients file's \"secret_sha256\".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret, err := readSecret(cmd.InOrStdin())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), authn.HashSecret(secret))
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "new-token",
		Short: "Print a new random token and its sha256 hex",
		Long: "new-token prints a fresh random token (32 bytes, base64url) on the first line\n" +
			"and its hex SHA-256 on the second. Give the token to the client and keep only\n" +
			"the hash in the token file.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := authn.NewToken()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", token, authn.HashSecret(token))
			return err
		},
	})
	return cmd
}

// readSecret reads the first line of r. Surrounding whitespace is an
// error rather than trimmed: a hash of "tok " would never match "tok".
func readSecret(r io.Reader) (string, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxSecretLen+2), maxSecretLen+2).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	switch {
	case line == "":
		return "", errors.New("no token on stdin")
	case len(line) > maxSecretLen:
		return "", fmt.Errorf("the token on stdin is longer than %d bytes", maxSecretLen)
	case strings.TrimSpace(line) != line:
		return "", errors.New("the token on stdin has leading or trailing spaces")
	}
	return line, nil
}
