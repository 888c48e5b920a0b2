package split

import (
	"os"
	"path/filepath"
	"testing"
)

// Stage leaves a context whose OUT_DIR directory holds its package byte for
// byte where it is: its Dir is that directory, nothing of it is staged, and
// its Commit swaps nothing; a changed context is staged and swapped as
// before, and OUT_DIR ends as a fresh split writes it.
func TestStageKeepsUnchangedContexts(t *testing.T) {
	pkg, out := splitBase(t)
	files := basePackage()
	files["cm-b.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: b\n"
	writeTree(t, pkg, files)
	before := inodes(t, out)
	s := stageDir(t, pkg, out)
	if !s.Kept("ctx-a") || s.Kept("ctx-b") {
		t.Fatalf("kept: ctx-a %v, ctx-b %v; want only the unchanged ctx-a", s.Kept("ctx-a"), s.Kept("ctx-b"))
	}
	if got, want := s.Dir("ctx-a"), filepath.Join(s.d.Path, "ctx-a"); got != want {
		t.Errorf("ctx-a's package is %s, want OUT_DIR's own %s", got, want)
	}
	if staged, err := os.ReadDir(filepath.Join(s.tmp.New(), "ctx-a")); err != nil || len(staged) > 0 {
		t.Errorf("ctx-a was staged (%d entries, %v)", len(staged), err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir("ctx-b"), "cm-b.yaml")); err != nil {
		t.Fatalf("ctx-b's staged package lacks its new file: %v", err)
	}
	for _, c := range []string{"ctx-a", "ctx-b"} {
		if err := s.Commit(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	after := inodes(t, out)
	for _, p := range []string{"ctx-a", "ctx-a/apps/web.yaml", "ctx-a/Kptfile"} {
		if after[p] != before[p] {
			t.Errorf("%s was replaced, though unchanged", p)
		}
	}
	if after["ctx-b"] == before["ctx-b"] {
		t.Error("ctx-b was not swapped in")
	}
	s.Close()
	wantFresh(t, pkg, out)
}

// A kept context edited after Stage compared it: Recheck finds it and
// stages the package, which its Commit swaps in.
func TestKeptContextEditedBeforeItIsRead(t *testing.T) {
	pkg, out := splitBase(t)
	s := stageDir(t, pkg, out)
	if !s.Kept("ctx-a") {
		t.Fatal("ctx-a, unchanged, is not kept")
	}
	edit(t, filepath.Join(out, "ctx-a", "apps", "web.yaml"), "image: nginx", "image: nginy")
	same, err := s.Recheck("ctx-a")
	if err != nil {
		t.Fatal(err)
	}
	if same || s.Kept("ctx-a") {
		t.Fatalf("Recheck %v, kept %v after an edit; want the context staged", same, s.Kept("ctx-a"))
	}
	if data, err := os.ReadFile(filepath.Join(s.Dir("ctx-a"), "apps", "web.yaml")); err != nil || string(data) == "" ||
		filepath.Dir(s.Dir("ctx-a")) != s.tmp.New() {
		t.Fatalf("ctx-a is not staged after all: %s (%v)", s.Dir("ctx-a"), err)
	}
	if err := s.Commit("ctx-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("ctx-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	wantFresh(t, pkg, out)
}

// A kept context edited once read, before its Commit: the Commit finds it
// and swaps the package in, so that OUT_DIR holds what split writes.
func TestKeptContextEditedBeforeCommit(t *testing.T) {
	pkg, out := splitBase(t)
	s := stageDir(t, pkg, out)
	if same, err := s.Recheck("ctx-a"); err != nil || !same {
		t.Fatalf("Recheck of an unchanged kept context: %v, %v", same, err)
	}
	before := inodes(t, out)
	edit(t, filepath.Join(out, "ctx-a", "apps", "web.yaml"), "image: nginx", "image: nginy")
	for _, c := range []string{"ctx-a", "ctx-b"} {
		if err := s.Commit(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if after := inodes(t, out); after["ctx-a"] == before["ctx-a"] {
		t.Error("the edited ctx-a was not swapped")
	}
	s.Close()
	wantFresh(t, pkg, out)
}
