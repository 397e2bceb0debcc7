package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The config file of `floe serve` (--config floe.yaml) holds the same
// settings as its flags, under the flags' names. A name's dashes may
// also nest: gc-interval is `gc-interval: 1h` or `gc: {interval: 1h}`,
// auth-jwt-issuer may be `auth: {jwt: {issuer: ...}}`. The accepted keys
// are the command's registered flags, so a new flag is configurable
// without more code. The command line wins over FLOE_* variables, which
// win over the file, which wins over the defaults.

const (
	configFlag      = "config"
	printConfigFlag = "print-config"
	// secretAnnotation marks a flag whose value --print-config redacts,
	// for secrets the name rule (isSecret) does not recognize.
	secretAnnotation = "floe-secret"
)

// origin says where a setting's effective value came from.
type origin struct {
	kind string // "default", "flag", "env" or "file"
	// where is the variable's name (env) or file:line (file).
	where string
}

// settings are the effective values of a command's configurable flags.
type settings struct {
	flags   []*pflag.Flag
	origins map[string]origin
}

// registerConfigFlags adds --config and --print-config to serve.
func registerConfigFlags(f *pflag.FlagSet) {
	f.String(configFlag, "", "YAML file of settings: every flag's name is a key, dashes may nest (gc: {interval: 1h}); flags and FLOE_* variables override it (see deploy/floe.yaml)")
	f.Bool(printConfigFlag, false, "print the effective configuration as YAML, secrets redacted, and exit")
}

// configurableFlags are the settings of cmd a config file may hold: its
// own flags, not the root's client flags, help or the config flags.
func configurableFlags(cmd *cobra.Command) []*pflag.Flag {
	inherited := cmd.InheritedFlags()
	var out []*pflag.Flag
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Name == "help" || f.Name == configFlag || f.Name == printConfigFlag:
		case inherited.Lookup(f.Name) != nil:
		default:
			out = append(out, f)
		}
	})
	return out
}

// resolveSettings gives every configurable flag of cmd its value from,
// in order of precedence, the command line, its FLOE_* variable, the file
// named by --config (or FLOE_CONFIG) and its default.
func resolveSettings(cmd *cobra.Command) (*settings, error) {
	flags := cmd.Flags()
	for _, name := range []string{configFlag, printConfigFlag} {
		if err := envFallback(flags.Lookup(name)); err != nil {
			return nil, err
		}
	}
	s := &settings{flags: configurableFlags(cmd), origins: map[string]origin{}}
	var file map[string]fileSetting
	if path, _ := flags.GetString(configFlag); path != "" {
		var err error
		if file, err = loadConfigFile(path, s.flags); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, f := range s.flags {
		name := envName(f.Name)
		v, inEnv := os.LookupEnv(name)
		fs, inFile := file[f.Name]
		switch {
		case f.Changed:
			s.origins[f.Name] = origin{kind: "flag"}
		case inEnv:
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("invalid %s=%q: %w", name, v, err))
			}
			s.origins[f.Name] = origin{kind: "env", where: name}
		case inFile:
			if err := fs.apply(f); err != nil {
				errs = append(errs, err)
			}
			s.origins[f.Name] = origin{kind: "file", where: fs.where}
		default:
			s.origins[f.Name] = origin{kind: "default"}
		}
	}
	return s, errors.Join(errs...)
}

// envFallback sets f from its FLOE_* variable unless the command line
// gave it.
func envFallback(f *pflag.Flag) error {
	if f == nil || f.Changed {
		return nil
	}
	name := envName(f.Name)
	if v, ok := os.LookupEnv(name); ok {
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("invalid %s=%q: %w", name, v, err)
		}
	}
	return nil
}

// fileSetting is one flag's value in the config file.
type fileSetting struct {
	value *yaml.Node
	key   string // as written: gc.interval
	where string // file:line
}

// apply sets f to the file's value. A YAML list goes to a list flag as
// its items; a scalar is parsed as the flag parses its command-line
// value, so a wrong type is the flag's own error, with the line.
func (fs fileSetting) apply(f *pflag.Flag) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", fs.where, fs.key, fmt.Sprintf(format, args...))
	}
	switch fs.value.Kind {
	case yaml.SequenceNode:
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return fail("--%s takes one %s, not a list", f.Name, f.Value.Type())
		}
		items := make([]string, 0, len(fs.value.Content))
		for _, item := range fs.value.Content {
			if item.Kind != yaml.ScalarNode {
				return fail("line %d: a list item of --%s must be a plain value", item.Line, f.Name)
			}
			items = append(items, item.Value)
		}
		if err := sv.Replace(items); err != nil {
			return fail("invalid value for --%s (%s): %v", f.Name, f.Value.Type(), err)
		}
	case yaml.ScalarNode:
		if err := f.Value.Set(fs.value.Value); err != nil {
			return fail("invalid value %q for --%s (%s): %v", fs.value.Value, f.Name, f.Value.Type(), err)
		}
	default:
		return fail("--%s takes one %s, not a mapping", f.Name, f.Value.Type())
	}
	return nil
}

// loadConfigFile reads path and returns its settings by flag name. Every
// key must name one of flags or, holding a mapping, a prefix of their
// names; otherwise the error names the key and its line.
func loadConfigFile(path string, flags []*pflag.Flag) (map[string]fileSetting, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // an empty file sets nothing
	}
	root := resolveAlias(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the config file must be a mapping of settings", path, root.Line)
	}
	l := &configLoader{path: path, flags: map[string]*pflag.Flag{}, groups: map[string]bool{}, out: map[string]fileSetting{}}
	for _, f := range flags {
		l.flags[f.Name] = f
		parts := strings.Split(f.Name, "-")
		for i := 1; i < len(parts); i++ {
			l.groups[strings.Join(parts[:i], "-")] = true
		}
	}
	l.walk(nil, nil, root)
	return l.out, errors.Join(l.errs...)
}

type configLoader struct {
	path   string
	flags  map[string]*pflag.Flag // by name
	groups map[string]bool        // dash-separated prefixes of flag names
	out    map[string]fileSetting
	errs   []error
}

func (l *configLoader) fail(line int, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s:%d: %s", l.path, line, fmt.Sprintf(format, args...)))
}

// walk reads the mapping m found under the flag-name prefix name (its
// parts) and key path keys (as written).
func (l *configLoader) walk(name, keys []string, m *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			l.fail(k.Line, "a key must be a plain name")
			continue
		}
		if k.Value == "<<" {
			l.fail(k.Line, "merge keys (<<) are not supported")
			continue
		}
		fname := strings.Join(append(slices.Clone(name), k.Value), "-")
		key := strings.Join(append(slices.Clone(keys), k.Value), ".")
		flag, isGroup := l.flags[fname], l.groups[fname]
		isFlag := flag != nil
		switch {
		case !isFlag && !isGroup:
			l.fail(k.Line, "unknown key %s: floe serve has no flag --%s", key, fname)
		case v.Kind == yaml.MappingNode && isGroup:
			l.walk(append(slices.Clone(name), k.Value), append(slices.Clone(keys), k.Value), v)
		case v.Kind == yaml.MappingNode:
			l.fail(v.Line, "%s: --%s takes one %s, not a mapping", key, fname, flag.Value.Type())
		case !isFlag:
			l.fail(k.Line, "%s is a group of settings (%s-…), it needs a mapping", key, fname)
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			// `key:` with no value keeps the default, as an empty line
			// in an annotated example would.
		default:
			if prev, dup := l.out[fname]; dup {
				l.fail(k.Line, "%s sets --%s again (first set by %s at %s)", key, fname, prev.key, prev.where)
				continue
			}
			l.out[fname] = fileSetting{value: v, key: key, where: fmt.Sprintf("%s:%d", l.path, k.Line)}
		}
	}
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// print writes the effective configuration as YAML a config file could
// hold, each value's origin as a comment. Secrets are redacted.
func (s *settings) print(w io.Writer) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	root.HeadComment = "effective configuration of floe serve; secrets are redacted"
	groups := printGroups(s.flags)
	groupNodes := map[string]*yaml.Node{}
	for _, f := range s.flags {
		key, parent := f.Name, root
		if g, ok := groups[f.Name]; ok {
			gn := groupNodes[g]
			if gn == nil {
				gn = &yaml.Node{Kind: yaml.MappingNode}
				groupNodes[g] = gn
				root.Content = append(root.Content, scalar(g), gn)
			}
			key, parent = strings.TrimPrefix(f.Name, g+"-"), gn
		}
		v := valueNode(f)
		switch o := s.origins[f.Name]; o.kind {
		case "flag":
			v.LineComment = "--" + f.Name
		case "env", "file":
			v.LineComment = o.where
		}
		parent.Content = append(parent.Content, scalar(key), v)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("printing the configuration: %w", err)
	}
	return enc.Close()
}

// notGroups are first name parts shared by flags that are not one
// subsystem (max-body-bytes, max-metadata-file-bytes): --print-config
// keeps such flags at the top level.
var notGroups = map[string]bool{"max": true, "read": true, "write": true, "idle": true}

// printGroups nests, for --print-config, flags whose first name part is
// shared with another flag and is not a flag itself: gc-interval and
// gc-grace print as gc: {interval, grace}. It returns each nested flag's
// group.
func printGroups(flags []*pflag.Flag) map[string]string {
	names := map[string]bool{}
	count := map[string]int{}
	for _, f := range flags {
		names[f.Name] = true
		if first, _, ok := strings.Cut(f.Name, "-"); ok {
			count[first]++
		}
	}
	out := map[string]string{}
	for _, f := range flags {
		first, _, ok := strings.Cut(f.Name, "-")
		if ok && count[first] > 1 && !names[first] && !notGroups[first] {
			out[f.Name] = first
		}
	}
	return out
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// valueNode is f's value as YAML, typed as the flag is, redacted.
func valueNode(f *pflag.Flag) *yaml.Node {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, item := range sv.GetSlice() {
			n.Content = append(n.Content, scalar(redactValue(item)))
		}
		return n
	}
	v := f.Value.String()
	switch t := f.Value.Type(); {
	case t == "bool":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v}
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: v}
	case strings.HasPrefix(t, "float"):
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: v}
	}
	if isSecret(f) && v != "" {
		return scalar(redacted)
	}
	return scalar(redactValue(v))
}

const redacted = "<redacted>"

// isSecret reports whether f's value is a secret: a flag marked with
// secretAnnotation, or one whose name ends in secret, password, token or
// key (--s3-secret-access-key), or has secret in it and does not name a
// file. A file holding a secret (--auth-token-file) is a path, shown.
func isSecret(f *pflag.Flag) bool {
	if _, ok := f.Annotations[secretAnnotation]; ok {
		return true
	}
	parts := strings.Split(f.Name, "-")
	switch last := parts[len(parts)-1]; last {
	case "secret", "password", "passwd", "token", "key", "credential":
		return true
	case "file", "dir", "id":
		return false
	}
	return slices.Contains(parts, "secret") || slices.Contains(parts, "password")
}

// passwordParam matches a password in a key=value connection string
// (host=db password=s3cret) or a URL query (?password=s3cret&...).
var passwordParam = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('[^']*'|[^\s&]+)`)

// redactValue hides the password of a URL (postgres://u:pw@host/db) or of
// a key=value connection string, whatever flag holds it.
func redactValue(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			v = u.Redacted()
		}
	}
	return passwordParam.ReplaceAllString(v, "${1}"+redacted)
}
