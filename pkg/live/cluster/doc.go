// Package cluster is the live plumbing shared by the commands that talk to
// clusters (apply, status): a kubeconfig and its contexts, one client
// factory per context built as kpt builds its own, a context package read
// from the output directory as kpt live apply reads it, and the live
// ResourceGroup inventory of a context.
//
// Everything here is kpt's own library (github.com/kptdev/kpt/pkg/live) and
// cli-utils, wired once, so that shard-router reads, identifies and applies
// a package exactly as `kpt live apply OUT_DIR/<ctx> --context <ctx>` does.
package cluster
