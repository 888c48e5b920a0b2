// Package status is `shard-router status`: every context's objects as its
// cluster holds them, against the context's package in OUT_DIR and its live
// ResourceGroup inventory. Per object: kstatus' health, drift (the fields of
// the package an apply would change), and whether the inventory and the
// package agree. Contexts are read in parallel, each with its own timeout,
// and objects in batches (one list per kind and namespace).
package status
