// Package sourcetree keeps the source trees render-controller builds from:
// each source artifact is downloaded and extracted once per digest, into a
// tree every Kustomization rendering that revision reads at the same time.
//
// Why: a fleet shares a few repositories. Extracting the whole artifact
// once per Kustomization made render-controller's cost the number of
// Kustomizations times the size of the repository, quadratic for a monorepo
// of apps, and 83 to 91 % of its CPU in the fleet benchmark
// (docs/bench/fleet.md). pkg/render's Build writes nothing to its tree, so
// one copy serves every build of the revision.
//
// The rules:
//
//   - A tree is made once: concurrent Acquires of one digest wait for the
//     first, which downloads (with the caller's fetch, so its timeout and
//     retries hold) and extracts with pkg/artifact's checks (the digest
//     first, then every entry). A refused archive is refused for every
//     waiter (the same digest is the same bytes); a failure the fetcher's
//     own context caused sends the waiters to fetch themselves. No failure
//     is remembered: the next Acquire tries again.
//   - A tree in use is never removed. Trees nobody uses are kept, least
//     recently used first out, while the trees in all stay within MaxBytes
//     of extracted file bytes and MaxTrees trees; so a tree lives as long as
//     its revision is rendered and the disk holds at most MaxBytes plus what
//     the renders in flight use (at most --concurrent trees).
//   - Trees live in a folder of this process's own (render-sources-<pid>-*
//     under the temporary folder), removed on Close; folders left by a
//     process that is gone (a container restarted with the same emptyDir)
//     are removed by New.
//
// Nothing here is a general cache library: the in-use counting, the
// per-digest waiting and the removal of folders on eviction are the whole of
// it, and a library's LRU would hold values, not folders on disk.
package sourcetree
