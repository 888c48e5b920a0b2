// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at the
// version pinned in this module's go.mod. It exists so the end-to-end tests can
// run kube-apiserver against several real etcds (--etcd-servers-overrides). It
// is its own module because etcd v3.6's gRPC and OpenTelemetry requirements are
// newer than k8s.io/kubernetes v1.34's, and sharing a module would rebuild
// kube-apiserver with versions it was not released with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
