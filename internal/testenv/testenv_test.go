package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing runs a child test that calls Missing, once without and once
// with CI=true, and checks that it skips, then fails.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Missing(t, "a tool", "install it")
		return
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantText string
	}{
		{ci: "", wantFail: false, wantText: "--- SKIP: TestMissing"},
		{ci: "true", wantFail: true, wantText: "CI must provide it"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.wantText) {
			t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, tc.wantText, out)
		}
	}
}
