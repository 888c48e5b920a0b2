// Package outdir owns OUT_DIR, the output directory of split, plan and
// apply: what each cluster last received, and a rollout's state. It reads
// a previous split's OUT_DIR (OpenOutDir, OpenPrevious, OpenExisting; what
// each context held, scanned or parsed), locks it (LockOutDir), stages
// context packages and swaps them in one directory at a time (Staging,
// ReplaceDir, RecoverStale), writes the marker files (WriteMarker), and
// keeps an unfinished rollout's record and the packages it replaced
// (OpenRollout). What goes into a context package, and whether a context
// is rewritten at all, is package split's: it renders into a Staging.
//
// OUT_DIR holds, and split and apply keep there, nothing but:
//
//	OUT_DIR/
//	  .shard-router-split              root marker (MarkerFile): MarkerFormat, then
//	                                   "context <name>" per context directory split wrote;
//	                                   without it a non-empty OUT_DIR is refused
//	  .shard-router.lock               LockFile: flock(2) of the writer (split -o, apply),
//	                                   holding its pid; removed by Unlock, left by a kill
//	  .shard-router-fleet.json         FleetFile: apply's record of the clusters it wrote (the
//	                                   owner id of the inventories; per context the serial,
//	                                   digest and cluster identity of its last write)
//	  .shard-router-gates.json         GatesFile: what each wave's promotion gates measured in
//	                                   the last apply that baked it (status shows it)
//	  <context>/                       one kpt package per context, what it last received:
//	    .shard-router-split            context marker: "context <name>", then "file <path>"
//	                                   per file split wrote (the only files it replaces)
//	    Kptfile                        as kpt pkg init writes one (no inventory)
//	    resourcegroup.yaml             RGFile, the ResourceGroup inventory (kpt live init)
//	    shard-router-etcd-overrides.yaml  the context's datastore record
//	    <the package's files>          the context's resources, in the input's layout
//	  _gitops/                         a pulling engine's own objects (gitops.Dir, split
//	                                   --engine), with its own marker, and
//	    shard-router-handoff.yaml      the pending move hand-offs (split.HandoffFile)
//	  .shard-router-split-tmp-*/       a staging directory (TmpPrefix), marked; removed
//	                                   when its run ends, by RecoverStale after a kill
//	    new/<context>/                 the packages being swapped in
//	    old/<context>/                 what they replaced (or renamed aside, for a moment,
//	                                   where the system cannot exchange two directories)
//	  .shard-router-rollout/           RolloutDir: an unfinished apply (removed when it
//	                                   completes or is rolled back)
//	    rollout.json                   the waves, the contexts changed (and whether they
//	                                   had a package before), the waves baked
//	    previous/<context>/            the package each changed context held before the
//	                                   run, for a rollback (apply --rollback)
//	    restore-<context>/, aside-<context>/  transient, while a rollback puts one back
//
// Every change to a context directory is one rename of a whole directory
// (RENAME_EXCHANGE on Linux), so OUT_DIR/<context> is always one complete
// package: the old one or the new one.
package outdir
