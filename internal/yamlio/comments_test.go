package yamlio_test

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// commentCases are Deployments with a comment block after a nested list
// (as operators ship them: a commented-out port or container), at every
// indentation, with and without a blank line after it, followed by keys
// at every level or by the end of the document, in both sequence styles.
func commentCases() []string {
	var out []string
	for _, wide := range []bool{false, true} {
		for indent := 0; indent <= 12; indent += 2 {
			for _, blank := range []string{"", "\n"} {
				for _, after := range []string{"", "      volumes: []\n", "    dnsPolicy: x\n", "  replicas: 1\n", "        image: y\n", "status: {}\n"} {
					list := "      - name: manager\n        ports:\n        - containerPort: 9443\n"
					if wide {
						list = "        - name: manager\n          ports:\n            - containerPort: 9443\n"
					}
					c := strings.Repeat(" ", indent)
					out = append(out, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: ns\nspec:\n  template:\n    spec:\n      containers:\n"+
						list+c+"# - containerPort: 8080\n"+c+"#   name: metrics\n"+blank+after)
				}
			}
		}
	}
	return out
}

// TestEncodeIsAFixedPoint: what Encode writes (fast and reference), read
// back as a package file and written again, gives the same bytes; and
// yaml.v3 alone would not (the test would pass without settleComments).
func TestEncodeIsAFixedPoint(t *testing.T) {
	unsettled := 0
	for i, in := range commentCases() {
		if _, err := yaml.Parse(in); err != nil {
			continue // the key after the comment does not fit that list
		}
		for _, opts := range []yamlio.Options{{}, {Reference: true}} {
			name := fmt.Sprintf("case %d, reference %v", i, opts.Reference)
			pass1, err := yamlio.Encode(parseAll(t, in), opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			pass2, err := yamlio.Encode(parseAll(t, string(pass1)), opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if string(pass2) != string(pass1) {
				t.Errorf("%s: the second pass changes the bytes:\n--- input\n%s--- pass 1\n%s--- pass 2\n%s", name, in, pass1, pass2)
			}
			if !sameObject(t, in, string(pass1)) {
				t.Errorf("%s: the object changed:\n%s", name, pass1)
			}
		}
		if once := encodeOnce(t, in); once != encodeOnce(t, once) {
			unsettled++
		}
	}
	if unsettled == 0 {
		t.Error("yaml.v3 alone writes every case as a fixed point: the cases no longer exercise settleComments")
	}
}

// encodeOnce is a plain yaml.v3 pass, without settling.
func encodeOnce(t *testing.T, in string) string {
	t.Helper()
	n, err := yaml.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := n.String()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameObject compares the objects two documents decode to.
func sameObject(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := yaml.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
