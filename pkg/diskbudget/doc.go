// Package diskbudget bounds the disk a Git checkout of an untrusted
// repository uses: go-git writes the repository and the worktree through
// a filesystem (FS) that charges every byte written, the pack as it
// streams in and then each checked-out file, to one Budget, and refuses
// the first write that would pass it. Counting what reaches the disk
// rather than what a transport reads bounds HTTP and SSH alike, and also
// catches a small pack that inflates into a large tree.
//
// go-git wraps the refusal in its own errors, so callers ask the Budget
// (Exceeded) rather than the error whether the limit was passed.
// source-controller's fetches and image-controller's update checkouts
// use it.
package diskbudget
