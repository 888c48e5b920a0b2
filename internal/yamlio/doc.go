// Package yamlio is the one place where shard-router reads and writes KRM
// YAML faster than kyaml does, and where kyaml's own readers and writers
// remain the reference each fast path must match byte for byte:
//
//   - function mode: RunFunction, the streaming path (splitter, per-item
//     parsing, kyaml's internal-annotation bookkeeping, the fast encoder)
//     against framework.Execute (both then settle moving comments,
//     settleList in comments.go);
//   - ReadStream: a ResourceList item by item (ReadList) against
//     kio.ByteReader;
//   - ReadPackage: a package file by file on every core against
//     kio.LocalPackageReader;
//   - Encode: a package file edited and encoded directly against
//     kio.ByteWriter (both then settle moving comments, comments.go);
//   - JSONObject: a resource node converted directly to the object kpt live
//     applies, against kpt's conversion through YAML and JSON text
//     (KptObject; the differential test against kpt's own loader is
//     pkg/live/cluster's);
//   - ScanObjects: the identifying fields of the files split wrote, read
//     line by line, against kio.ByteReader (FuzzScanMatchesReference);
//
// with what they share: the writers keep every scalar's value (KeepScalars,
// scalars.go), the mapped input, the packed-node codec (Pack, Unpack), the
// worker pool (Parallel, ForEach), the node helpers (HasAnchors, CopyNode),
// the object digest (Digester), which annotations a written file never
// carries and neither plan nor a size counts (Bookkeeping), and the check every reader and
// encoder makes on both paths, that a resource is a Kubernetes object at all (CheckResource: kyaml hands on,
// and panics on, nodes that are not). A fast path refuses what it is not sure
// about (IsFallback) and the reference then reads the same bytes;
// Options.Reference takes the reference for every input. These paths copy
// behaviour kyaml keeps private (annotation-format reconciliation, what
// kio.ByteWriter clears, the package reader's order of checks), so a kyaml
// or yaml.v3 upgrade is understood here, and the differential suite and
// FuzzFastMatchesReference say whether it still holds.
//
// The package has no notion of routing: function mode's work is a
// Function, and the readers hand every resource to a read function. It
// reads no environment variable and sets no process-wide setting; the
// command line builds the Options.
package yamlio
