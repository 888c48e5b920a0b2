package kinds

import "testing"

// TestCohabitationFirstGroupServed checks what storage resolution relies on:
// kube-apiserver stores a cohabitation list under its first group that has
// any resource enabled, so the first group of every list must be served by
// this release (then it wins) and the extensions group must not be.
func TestCohabitationFirstGroupServed(t *testing.T) {
	served := map[string]bool{}
	for _, k := range servedKinds {
		served[k.Group] = true
	}
	if len(cohabitations) == 0 {
		t.Fatal("no cohabitation lists")
	}
	if served["extensions"] {
		t.Error("this release serves the extensions group: cohabitation resolution must prefer it where it comes first")
	}
	for _, list := range cohabitations {
		if !served[list[0].Group] {
			t.Errorf("%v: its first group %q is not served, so kube-apiserver would store the list under another group", list, list[0].Group)
		}
	}
}
