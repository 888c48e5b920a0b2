package apply

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// kubeconfigUsers writes a kubeconfig whose contexts A and B reach a
// closed port, as users a and b (YAML fields of each user entry).
func kubeconfigUsers(t *testing.T, a, b string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: a
  user: %s
- name: b
  user: %s
contexts:
- name: A
  context: {cluster: c, user: a}
- name: B
  context: {cluster: c, user: b}
`, a, b)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A context whose exec plugin is missing refuses the whole run, naming the
// context, its user entry and the plugin; an unreachable one (A) fails
// alone, as it always did.
func TestCredentialsFailureRefusesTheRun(t *testing.T) {
	pkg, out := setup(t)
	before := tree(t, out)
	plugin := filepath.Join(t.TempDir(), "no-such-plugin")
	kubeconfig := kubeconfigUsers(t, `{token: t}`, fmt.Sprintf(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}`, plugin))
	report, err := runApply(t, pkg, out, kubeconfig)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("error %v, want ErrRefused", err)
	}
	want := fmt.Sprintf(`context "B": kubeconfig user "b": exec plugin %s: not found: found before any write`, plugin)
	if len(report.Errors) != 1 || !strings.HasPrefix(report.Errors[0], want) {
		t.Errorf("errors %q, want one: %q", report.Errors, want)
	}
	for _, c := range report.Contexts {
		if c.Status != v1alpha1.ApplyFailed {
			t.Errorf("context %s: %s, want Failed", c.Name, c.Status)
		}
		if c.Name == "A" && (strings.Contains(c.Error, "credentials") || !strings.Contains(c.Error, "connection refused")) {
			t.Errorf("context A (unreachable): %q, want its connection refused, no credentials", c.Error)
		}
	}
	if after := tree(t, out); len(after) != len(before) {
		t.Errorf("OUT_DIR changed: %d files, was %d", len(after), len(before))
	}

	// Both unreachable: no refusal, each context fails alone.
	report, err = runApply(t, pkg, out, kubeconfigUsers(t, `{token: t}`, `{token: t}`))
	if err != nil || len(report.Errors) != 0 || !report.Failed() {
		t.Errorf("two unreachable contexts: error %v, errors %q, failed %v; want each failed alone", err, report.Errors, report.Failed())
	}
}

// jwt is an unsigned JWT whose exp is exp.
func jwt(exp time.Time) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"ci","exp":%d}`, exp.Unix()))) + ".sig"
}

// A bearer token that is a JWT expiring before the rollout's bakes can
// end is warned about before the run starts: in the kubeconfig or in its
// token file; one that outlives them, or that is no JWT, is not.
func TestWarnsOfTokensExpiringBeforeTheBakes(t *testing.T) {
	pkg, out := setup(t)
	shards := strings.Replace(pkgFiles["shards.yaml"], "  - name: A\n", "  - name: A\n    labels: {stage: canary}\n", 1) +
		"  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: 10m\n    - name: rest\n      contexts: {}\n      bakeTime: 5m\n"
	if err := os.WriteFile(filepath.Join(pkg, "shards.yaml"), []byte(shards), 0o644); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(2 * time.Minute).Truncate(time.Second)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(jwt(soon)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, a, b string
		want       []string
	}{
		{"token", fmt.Sprintf("{token: %q}", jwt(soon)), fmt.Sprintf("{token: %q}", jwt(time.Now().Add(time.Hour))),
			[]string{`context "A": the token of kubeconfig user "a" expires at ` + soon.UTC().Format(time.RFC3339)}},
		{"token file", `{token: not-a-jwt}`, fmt.Sprintf("{tokenFile: %q}", tokenFile),
			[]string{fmt.Sprintf(`context "B": the token in %s (kubeconfig user "b") expires at %s`, tokenFile, soon.UTC().Format(time.RFC3339))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, _ := runApply(t, pkg, out, kubeconfigUsers(t, tc.a, tc.b))
			var warned []string
			for _, w := range report.Warnings {
				if strings.Contains(w, "before the rollout's bakes can end (15m0s of bakes") {
					warned = append(warned, w)
				}
			}
			if len(warned) != len(tc.want) {
				t.Fatalf("warnings %q, want %d about the token", report.Warnings, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(warned[i], w) {
					t.Errorf("warning %q, want %q", warned[i], w)
				}
			}
		})
	}
}
