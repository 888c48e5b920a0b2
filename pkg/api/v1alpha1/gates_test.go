package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpandPlaceholders(t *testing.T) {
	labels := map[string]string{"region": "eu", "stage": "canary"}
	for in, want := range map[string]string{
		"https://{{.context}}.example.com/healthz":         "https://eu-0.example.com/healthz",
		`errors{region="{{.labels.region}}"}`:              `errors{region="eu"}`,
		"{{.labels.stage}}-{{.context}}-{{.labels.stage}}": "canary-eu-0-canary",
		"no placeholder": "no placeholder",
	} {
		if got := ExpandPlaceholders(in, "eu-0", labels); got != want {
			t.Errorf("ExpandPlaceholders(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	for in, bad := range map[string]bool{
		"{{.context}}/{{.labels.a}}": false, "plain": false,
		"{{.labels.}}": true, "{{ .context }}": true, "{{.context": true, "x}}": true, "{{range .}}": true,
	} {
		if _, err := placeholders(in); (err != nil) != bad {
			t.Errorf("placeholders(%q): err %v, want error %v", in, err, bad)
		}
	}
}

func TestGateDefaults(t *testing.T) {
	g := Gate{Kubernetes: &KubernetesGate{SuccessCondition: "s", FailureCondition: "f"}}
	if s, f := g.Conditions(); s != "s" || f != "f" {
		t.Errorf("Conditions = %q, %q", s, f)
	}
	if f, i, e := g.Limits(); f != 0 || i != 0 || e != DefaultConsecutiveErrorLimit {
		t.Errorf("Limits = %d %d %d", f, i, e)
	}
	three := int32(3)
	g.Count, g.Interval, g.InitialDelay = &three, &metav1.Duration{Duration: 10 * time.Second}, &metav1.Duration{Duration: 5 * time.Second}
	if got := g.Span(); got != 25*time.Second {
		t.Errorf("Span = %s, want 25s", got)
	}
	if g.Provider() != "kubernetes" {
		t.Errorf("Provider = %q", g.Provider())
	}
}
