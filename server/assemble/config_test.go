package assemble_test

import (
	"reflect"
	"testing"

	"github.com/floe-catalog/floe/server/assemble"
)

// notData are the exceptions to TestConfigIsData, by the path of the
// field from Config, each with its reason.
var notData = map[string]string{
	// Other packages' option types, whose live fields Build always sets
	// itself (from Deps or the services it builds), whatever Config
	// holds: splitting each of those types in two is not worth it.
	"Security.Authn.Now":          "authn.Config's clock: Build sets Deps.AuthnNow",
	"Security.Policy.Logger":      "policy.Options: Build sets the process's logger",
	"Security.Policy.Metrics":     "policy.Options: Build sets the process's registry",
	"Security.Policy.DecisionLog": "policy.Options: Build opens Security.DecisionLog",
	"Security.Policy.OnActivate":  "policy.Options: Build sets its own hook (events.go)",
}

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
