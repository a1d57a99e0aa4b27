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
//     first, then every entry). An archive refused for its content, after
//     its digest matched, is refused for every waiter (the same digest is
//     the same bytes); any other failure — the first caller's download,
//     its URL or deadline, a digest mismatch, the disk — is the first
//     caller's alone, and each waiter then fetches with its own fetch. No
//     failure is remembered: the next Acquire tries again. A panic ends the
//     attempt like a failure.
//   - A tree in use is never removed. Trees nobody uses are kept, least
//     recently used first out, while the trees in all stay within MaxBytes
//     and MaxTrees trees, each tree counted at what it takes on disk
//     (pkg/artifact's ExtractBytes: files in whole blocks, a block per
//     folder and link, so a tree of empty folders is not free). The disk
//     holds at most MaxBytes (or the trees in use, at most one per worker,
//     when they are more) plus the extractions in flight, one per worker.
//   - Trees live in a folder of this process's own (render-sources-<pid>-*
//     under the temporary folder). Close renames it as closed and leaves
//     it, so that a stop does not wait for thousands of files to go; New
//     removes, in the background, the closed folders and those left by a
//     process that is gone (a container restarted with the same emptyDir,
//     or killed). Between a stop and the next start the disk holds the
//     closed trees, at most what the cache held; while the next start
//     removes them, both.
//
// Nothing here is a general cache library: the in-use counting, the
// per-digest waiting and the removal of folders on eviction are the whole of
// it, and a library's LRU would hold values, not folders on disk.
package sourcetree
