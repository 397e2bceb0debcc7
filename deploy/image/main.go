package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "bin/floe-oci", "directory to write the OCI image layout to (must not exist)")
	bin := fs.String("bin", "", "a floe binary built as deploy/Dockerfile builds it (CGO_ENABLED=0, linux, stamped with -version); empty: build one")
	version := fs.String("version", "", "image version label and the binary's version (default: git describe --tags --always --dirty)")
	certs := fs.String("ca-certs", caCerts, "CA bundle to put at "+caCerts)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%s exists; remove it first", *out)
	}
	if *version == "" {
		b, err := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty").Output()
		if err != nil {
			return fmt.Errorf("git describe (or give -version): %w", err)
		}
		*version = strings.TrimSpace(string(b))
	}
	if *bin == "" {
		tmp, err := os.MkdirTemp("", "floe-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*bin = filepath.Join(tmp, "floe")
		if err := buildBinary(ctx, "go", ".", *version, *bin); err != nil {
			return err
		}
	}
	binary, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(*certs)
	if err != nil {
		return fmt.Errorf("-ca-certs: %w", err)
	}
	img, err := buildImage(binary, ca, *version, hostArch())
	if err != nil {
		return err
	}
	if err := writeLayout(*out, img, *version); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: floe %s, %s\n", *out, *version, d)
	return nil
}
