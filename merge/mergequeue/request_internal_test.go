package mergequeue

import (
	"reflect"
	"testing"
	"time"
)

// TestCloneRequestIsDeep fills every field of a Request, at every depth,
// clones it, and requires the clone to equal the original and to share
// nothing with it: after every slice element and pointer target of the
// clone is overwritten, the original still holds what it was filled with.
// A field added to the request document that cloneRequest does not copy
// deeply fails here.
func TestCloneRequestIsDeep(t *testing.T) {
	fill := func() *Request {
		r := &Request{}
		fillValue(reflect.ValueOf(r).Elem())
		return r
	}
	orig := fill()
	c := cloneRequest(orig)
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("clone differs from the original:\n%+v\n%+v", c, orig)
	}
	scribble(reflect.ValueOf(c).Elem())
	if !reflect.DeepEqual(orig, fill()) {
		t.Fatalf("changing the clone changed the original: it shares a slice or pointer with it")
	}

	// nil and empty slices stay what they were.
	empty := &Request{Tables: []string{}}
	if c := cloneRequest(empty); c.Tables == nil || c.Audit != nil || c.Validations != nil || c.StartedAt != nil {
		t.Fatalf("clone of an empty request: %+v", c)
	}
}

var filledTime = time.Date(2026, 12, 4, 1, 2, 3, 4, time.UTC)

// fillValue sets v and everything it reaches to non-zero values; a slice
// gets two elements.
func fillValue(v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(filledTime))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("filled")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fillValue(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i))
		}
	default:
		panic("fillValue: add a case for " + v.Kind().String())
	}
}

// scribble overwrites whatever v reaches through slices and pointers.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			v.Elem().Set(reflect.Zero(v.Elem().Type()))
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
			v.Index(i).Set(reflect.Zero(v.Index(i).Type()))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			scribble(v.Field(i))
		}
	}
}
