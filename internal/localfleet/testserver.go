package localfleet

import (
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/testenv"
)

// StartForTest starts one etcd and one kube-apiserver on 127.0.0.1 for a
// test of the slow tier, stopped when it ends, with the tools of toolsDir
// (make tools-cluster), and returns the path of a kubeconfig that reaches
// it as its admin.
func StartForTest(t testing.TB, toolsDir string) string {
	t.Helper()
	testenv.Slow(t, "starts etcd and kube-apiserver")
	tools := ToolIn(toolsDir)
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := tools(name); err != nil {
			testenv.Missing(t, name, "make tools-cluster")
		}
	}
	dir := t.TempDir()
	l := &Launcher{ToolPath: tools, OnStart: func(p *Proc) { t.Cleanup(p.Stop) }}
	creds, err := NewCreds(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := l.StartEtcd(dir, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if err := etcd.WaitReady(); err != nil {
		t.Fatal(err)
	}
	api, err := l.StartAPIServer(dir, "A", creds, etcd, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := api.WaitReady(); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(kubeconfig, creds, api); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
