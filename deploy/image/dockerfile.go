package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// This file reads the few Dockerfile instructions deploy/Dockerfile uses,
// enough to compare it with the image this program builds. It is not a
// general Dockerfile parser: no heredocs, no escape directive, and only
// the ${NAME} and $NAME substitutions of ARG values.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Line  int    // where it starts, 1-based
	Cmd   string // upper-case: FROM, RUN, COPY, ...
	Flags map[string]string
	Args  string // the rest, after the --flags
}

// stage is one FROM and the instructions up to the next.
type stage struct {
	From, Name   string
	Instructions []instruction
}

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM and
// the stages.
type dockerfile struct {
	GlobalArgs map[string]string
	Stages     []stage
}

func parseDockerfileFile(path string) (*dockerfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	df, err := parseDockerfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return df, nil
}

func parseDockerfile(r io.Reader) (*dockerfile, error) {
	insts, err := splitInstructions(r)
	if err != nil {
		return nil, err
	}
	df := &dockerfile{GlobalArgs: map[string]string{}}
	for _, in := range insts {
		if in.Cmd == "FROM" {
			words := strings.Fields(in.Args)
			st := stage{}
			switch {
			case len(words) == 1:
				st.From = words[0]
			case len(words) == 3 && strings.EqualFold(words[1], "AS"):
				st.From, st.Name = words[0], words[2]
			default:
				return nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", in.Line, in.Args)
			}
			df.Stages = append(df.Stages, st)
			continue
		}
		if len(df.Stages) == 0 {
			if in.Cmd != "ARG" {
				return nil, fmt.Errorf("line %d: %s before the first FROM", in.Line, in.Cmd)
			}
			name, value, _ := strings.Cut(in.Args, "=")
			df.GlobalArgs[strings.TrimSpace(name)] = strings.TrimSpace(value)
			continue
		}
		last := &df.Stages[len(df.Stages)-1]
		last.Instructions = append(last.Instructions, in)
	}
	if len(df.Stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return df, nil
}

// splitInstructions joins continuation lines (a trailing backslash),
// drops comments and blank lines, and splits each instruction into its
// command, its leading --flags and the rest.
func splitInstructions(r io.Reader) ([]instruction, error) {
	var out []instruction
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		// Comments and blank lines are skipped, also inside a
		// continued instruction, as Docker does.
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(trimmed)
		in, err := newInstruction(start, cur.String())
		if err != nil {
			return nil, err
		}
		out = append(out, in)
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: the last instruction ends in a continuation", start)
	}
	return out, nil
}

func newInstruction(line int, text string) (instruction, error) {
	cmd, rest, _ := strings.Cut(text, " ")
	in := instruction{Line: line, Cmd: strings.ToUpper(cmd), Flags: map[string]string{}}
	rest = strings.TrimSpace(rest)
	// Only these take --flags before their arguments.
	switch in.Cmd {
	case "COPY", "ADD", "FROM", "HEALTHCHECK", "RUN":
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			name, value, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.Flags[name] = value
			rest = strings.TrimSpace(after)
		}
	}
	in.Args = rest
	if in.Args == "" {
		return in, fmt.Errorf("line %d: %s without arguments", line, in.Cmd)
	}
	return in, nil
}

// words splits shell-like text into words: whitespace separates, double
// and single quotes group, a backslash escapes the next character.
func words(s string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

// expand substitutes ${NAME} and $NAME from args; an unknown name is an
// error, so a typo cannot slip through as an empty string.
func expand(s string, args map[string]string) (string, error) {
	var err error
	out := os.Expand(s, func(name string) string {
		v, ok := args[name]
		if !ok && err == nil {
			err = fmt.Errorf("$%s is not an ARG of the stage", name)
		}
		return v
	})
	return out, err
}

// execForm parses the JSON array form of ENTRYPOINT, CMD and HEALTHCHECK
// CMD. The shell form needs /bin/sh, which the image does not have.
func execForm(s string) ([]string, error) {
	var argv []string
	if !strings.HasPrefix(s, "[") {
		return nil, fmt.Errorf("%q is the shell form; the image has no shell, use the JSON form", s)
	}
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	return argv, nil
}

// keyValues parses ENV and LABEL arguments: KEY=VALUE pairs, quoted as in
// a shell (the legacy "ENV KEY VALUE" form is refused).
func keyValues(s string, args map[string]string) ([][2]string, error) {
	ws, err := words(s)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not KEY=VALUE", w)
		}
		if v, err = expand(v, args); err != nil {
			return nil, err
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// copyInstruction is a COPY of the final stage: where its sources land
// and who owns them.
type copyInstruction struct {
	From  string
	Chown string   // "uid:gid", "" for root
	Srcs  []string // as written
	Dests []string // the paths created in the image, one per source
}

// imageSpec is what the final stage of a Dockerfile declares about the
// image: the parts this program also sets.
type imageSpec struct {
	Base         string
	User         string
	Entrypoint   []string
	Cmd          []string
	Env          []string
	ExposedPorts []string
	Volumes      []string
	Labels       map[string]string
	Healthcheck  *healthcheck
	Copies       []copyInstruction
	Runs         []string // RUN in the final stage: there must be none
	WorkingDir   string
}

type healthcheck struct {
	Test                           []string
	Interval, Timeout, StartPeriod time.Duration
	Retries                        int
}

// finalSpec reads the last stage, with its ARGs (and global ARGs it
// redeclares) set from buildArgs or their defaults.
func (df *dockerfile) finalSpec(buildArgs map[string]string) (*imageSpec, error) {
	st := df.Stages[len(df.Stages)-1]
	spec := &imageSpec{Base: st.From, Labels: map[string]string{}}
	args := map[string]string{}
	for _, in := range st.Instructions {
		var err error
		switch in.Cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.Args, "=")
			name = strings.TrimSpace(name)
			v, ok := buildArgs[name]
			if !ok {
				if g, global := df.GlobalArgs[name]; global && def == "" {
					def = g
				}
				v = def
			}
			args[name] = v
		case "USER":
			spec.User, err = expand(in.Args, args)
		case "WORKDIR":
			spec.WorkingDir, err = expand(in.Args, args)
		case "ENTRYPOINT":
			spec.Entrypoint, err = execForm(in.Args)
		case "CMD":
			spec.Cmd, err = execForm(in.Args)
		case "ENV":
			var kvs [][2]string
			kvs, err = keyValues(in.Args, args)
			for _, kv := range kvs {
				spec.Env = append(spec.Env, kv[0]+"="+kv[1])
				args[kv[0]] = kv[1]
			}
		case "LABEL":
			var kvs [][2]string
			kvs, err = keyValues(in.Args, args)
			for _, kv := range kvs {
				spec.Labels[kv[0]] = kv[1]
			}
		case "EXPOSE":
			for _, p := range strings.Fields(in.Args) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				spec.ExposedPorts = append(spec.ExposedPorts, p)
			}
		case "VOLUME":
			var vs []string
			if strings.HasPrefix(in.Args, "[") {
				err = json.Unmarshal([]byte(in.Args), &vs)
			} else {
				vs = strings.Fields(in.Args)
			}
			spec.Volumes = append(spec.Volumes, vs...)
		case "HEALTHCHECK":
			spec.Healthcheck, err = parseHealthcheck(in)
		case "COPY":
			var c copyInstruction
			c, err = parseCopy(in)
			spec.Copies = append(spec.Copies, c)
		case "RUN":
			spec.Runs = append(spec.Runs, in.Args)
		default:
			err = fmt.Errorf("%s is not read by this parser", in.Cmd)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", in.Line, in.Cmd, err)
		}
	}
	return spec, nil
}

func parseHealthcheck(in instruction) (*healthcheck, error) {
	if strings.EqualFold(in.Args, "NONE") {
		return nil, nil
	}
	cmd, rest, _ := strings.Cut(in.Args, " ")
	if cmd != "CMD" {
		return nil, fmt.Errorf("want CMD [...] or NONE, got %q", in.Args)
	}
	argv, err := execForm(strings.TrimSpace(rest))
	if err != nil {
		return nil, err
	}
	// Docker's defaults for flags not given.
	hc := &healthcheck{Test: append([]string{"CMD"}, argv...), Interval: 30 * time.Second, Timeout: 30 * time.Second, Retries: 3}
	for name, v := range in.Flags {
		var err error
		switch name {
		case "interval":
			hc.Interval, err = time.ParseDuration(v)
		case "timeout":
			hc.Timeout, err = time.ParseDuration(v)
		case "start-period":
			hc.StartPeriod, err = time.ParseDuration(v)
		case "retries":
			_, err = fmt.Sscanf(v, "%d", &hc.Retries)
		default:
			err = fmt.Errorf("unknown flag --%s", name)
		}
		if err != nil {
			return nil, fmt.Errorf("--%s=%s: %w", name, v, err)
		}
	}
	return hc, nil
}

func parseCopy(in instruction) (copyInstruction, error) {
	c := copyInstruction{From: in.Flags["from"], Chown: in.Flags["chown"]}
	for name := range in.Flags {
		if name != "from" && name != "chown" {
			return c, fmt.Errorf("flag --%s is not read by this parser", name)
		}
	}
	ws := strings.Fields(in.Args)
	if len(ws) < 2 {
		return c, fmt.Errorf("want SRC... DEST, got %q", in.Args)
	}
	srcs, dest := ws[:len(ws)-1], ws[len(ws)-1]
	c.Srcs = srcs
	if len(srcs) > 1 && !strings.HasSuffix(dest, "/") {
		return c, fmt.Errorf("several sources need a DEST ending in /, got %q", dest)
	}
	for _, src := range srcs {
		if strings.HasSuffix(dest, "/") {
			c.Dests = append(c.Dests, dest+src[strings.LastIndex(src, "/")+1:])
		} else {
			c.Dests = append(c.Dests, dest)
		}
	}
	return c, nil
}
