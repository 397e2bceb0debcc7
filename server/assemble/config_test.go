package assemble_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server/assemble"
)

// notData are the exceptions to TestConfigIsData, by the path of the
// field from Config, each with its reason. Keep it empty: what is live
// belongs in Deps.
var notData = map[string]string{}

// TestConfigIsData holds Config to plain data, as etcd's embed.Config
// is: no function, interface, channel or unsafe pointer anywhere in it,
// however deep (through structs, pointers, slices, arrays and maps). What
// is live goes in Deps.
func TestConfigIsData(t *testing.T) {
	seen, excused := map[reflect.Type]bool{}, map[string]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		if why, ok := notData[path]; ok {
			t.Logf("%s is not data: %s", path, why)
			excused[path] = true
			return
		}
		switch typ.Kind() {
		case reflect.Func, reflect.Interface, reflect.Chan, reflect.UnsafePointer:
			t.Errorf("Config.%s is a %s (%s): it belongs in Deps", path, typ.Kind(), typ)
			return
		}
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(path, typ.Elem())
		case reflect.Map:
			walk(path+"[key]", typ.Key())
			walk(path, typ.Elem())
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	typ := reflect.TypeFor[assemble.Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		walk(f.Name, f.Type)
	}
	for path := range notData {
		if !excused[path] {
			t.Errorf("the exception %s names no field of Config: drop it", path)
		}
	}
}

// TestPolicyMirrorsOptions keeps assemble.Policy in step with
// policy.Options: every field of Options but the live ones Build sets is
// in Policy with its type, Policy has nothing else, and Options() copies
// each of them.
func TestPolicyMirrorsOptions(t *testing.T) {
	live := map[string]bool{"Logger": true, "Metrics": true, "DecisionLog": true, "OnActivate": true}
	opts, settings := reflect.TypeFor[policy.Options](), reflect.TypeFor[assemble.Policy]()
	var p assemble.Policy
	pv := reflect.ValueOf(&p).Elem()
	for i := range opts.NumField() {
		f := opts.Field(i)
		if live[f.Name] {
			continue
		}
		sf, ok := settings.FieldByName(f.Name)
		if !ok || sf.Type != f.Type {
			t.Errorf("policy.Options.%s (%s) is not in assemble.Policy with its type: add it and map it in Options()", f.Name, f.Type)
			continue
		}
		// A value of its own per field, so a field copied to another
		// shows.
		switch fv := pv.FieldByName(f.Name); fv.Kind() {
		case reflect.String:
			fv.SetString(fmt.Sprint("v", i))
		case reflect.Int, reflect.Int64:
			fv.SetInt(int64(i + 1))
		default:
			t.Errorf("policy.Options.%s: a %s, which this test cannot fill", f.Name, fv.Kind())
		}
	}
	for i := range settings.NumField() {
		if _, ok := opts.FieldByName(settings.Field(i).Name); !ok || live[settings.Field(i).Name] {
			t.Errorf("assemble.Policy.%s is no data field of policy.Options", settings.Field(i).Name)
		}
	}
	got := reflect.ValueOf(p.Options())
	for i := range settings.NumField() {
		name := settings.Field(i).Name
		if want := pv.Field(i).Interface(); got.FieldByName(name).Interface() != want {
			t.Errorf("Options().%s = %v, want %v", name, got.FieldByName(name).Interface(), want)
		}
	}
	for name := range live {
		if f, ok := opts.FieldByName(name); !ok {
			t.Errorf("policy.Options has no live field %s any more: drop it from this test", name)
		} else if !got.FieldByIndex(f.Index).IsZero() {
			t.Errorf("Options().%s is set: the caller sets the live fields", name)
		}
	}
}

// TestAuthnMirrorsConfig keeps assemble.Authn in step with authn.Config:
// the same fields but the clock, with their types, each copied by
// Config(now).
func TestAuthnMirrorsConfig(t *testing.T) {
	cfg, settings := reflect.TypeFor[authn.Config](), reflect.TypeFor[assemble.Authn]()
	if cfg.NumField() != settings.NumField()+1 {
		t.Errorf("authn.Config has %d fields, assemble.Authn %d: want all but Now", cfg.NumField(), settings.NumField())
	}
	for i := range cfg.NumField() {
		f := cfg.Field(i)
		if sf, ok := settings.FieldByName(f.Name); f.Name != "Now" && (!ok || sf.Type != f.Type) {
			t.Errorf("authn.Config.%s (%s) is not in assemble.Authn with its type", f.Name, f.Type)
		}
	}
	a := assemble.Authn{TokenFile: "tokens.json", JWT: authn.JWTConfig{JWKSURL: "https://idp/jwks"},
		OAuth: authn.OAuthConfig{ClientsFile: "clients.json"}, Dev: true, ReloadInterval: time.Minute}
	clock := time.Unix(1e9, 0)
	got := a.Config(func() time.Time { return clock })
	if got.Now == nil || !got.Now().Equal(clock) {
		t.Errorf("Config(now).Now is not now")
	}
	got.Now = nil
	want := authn.Config{TokenFile: a.TokenFile, JWT: a.JWT, OAuth: a.OAuth, Dev: a.Dev, ReloadInterval: a.ReloadInterval}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
}
