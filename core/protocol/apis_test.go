package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTableIsConsistent checks the promises the table makes to its readers:
// sorted unique keys, sane ranges, and no version kmsg cannot encode.
func TestTableIsConsistent(t *testing.T) {
	table := Supported()
	if len(table) == 0 {
		t.Fatal("empty API table")
	}
	for i, a := range table {
		if i > 0 && table[i-1].Key >= a.Key {
			t.Errorf("table not sorted by unique key at %d: %d then %d", i, table[i-1].Key, a.Key)
		}
		if a.MinVersion < 0 || a.MinVersion > a.MaxVersion {
			t.Errorf("%s: bad range %d..%d", a.Name(), a.MinVersion, a.MaxVersion)
		}
		req := kmsg.RequestForKey(a.Key)
		if req == nil {
			t.Errorf("key %d unknown to kmsg", a.Key)
			continue
		}
		if a.MaxVersion > req.MaxVersion() {
			t.Errorf("%s: max version %d beyond kmsg's %d", a.Name(), a.MaxVersion, req.MaxVersion())
		}
	}
}

func TestLookup(t *testing.T) {
	a, ok := Lookup(kmsg.ApiVersions.Int16())
	if !ok || a.Name() != "ApiVersions" || !a.Supports(0) || a.Supports(a.MaxVersion+1) {
		t.Fatalf("ApiVersions row wrong: %+v ok=%v", a, ok)
	}
	if _, ok := Lookup(9999); ok {
		t.Fatal("key 9999 must be unknown")
	}
	// Supported returns a copy: mutating it must not change the table.
	s := Supported()
	s[0].MaxVersion = 99
	if b, _ := Lookup(s[0].Key); b.MaxVersion == 99 {
		t.Fatal("Supported leaked the table")
	}
}
