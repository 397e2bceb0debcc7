package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable: "+err.Error())
		os.Exit(1)
	}
}

func run(files []string, stdin io.Reader, out io.Writer) error {
	var results []result
	if len(files) == 0 {
		r, err := parse(stdin)
		if err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
		results = r
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		r, err := parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		results = append(results, r...)
	}
	if len(results) == 0 {
		return fmt.Errorf("no benchmark results in the input")
	}
	return writeTable(out, results)
}
