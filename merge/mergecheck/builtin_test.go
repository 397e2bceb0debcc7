package mergecheck

import "testing"

func TestPropFallsBackToDefaults(t *testing.T) {
	v := &Validator{opts: Options{Defaults: map[string]string{PropMinRecords: " 5 "}}}
	if got := v.prop(&tableScan{}, PropMinRecords); got != "5" {
		t.Fatalf("default %q, want 5", got)
	}
	if got := v.prop(&tableScan{}, PropNotNull); got != "" {
		t.Fatalf("unset %q", got)
	}
}

func TestNullLimits(t *testing.T) {
	got, err := nullLimits("a, b", "c:0.25,*:1")
	if err != nil {
		t.Fatal(err)
	}
	want := []nullLimit{{column: "a", strict: true}, {column: "b", strict: true}, {column: "c", max: 0.25}, {column: "*", max: 1}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("limit %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"c", "c:", "c:2", "c:-0.1", "c:NaN", "c:x"} {
		if _, err := nullLimits("", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
