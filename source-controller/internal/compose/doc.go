// Package compose carries out an ArtifactGenerator's copy operations:
// files of extracted source artifacts (one folder per alias) copied,
// overwritten or merged into the folder of one output artifact, which
// source-controller then packs like any other source's.
//
// Everything it reads is hostile — the spec's paths and globs, and the
// trees of Git repositories and OCI layers — so it keeps to these rules:
//
//   - a "from" or "to" path with a ".." element, or an absolute one, is
//     refused before anything is read (ErrUnsafePath);
//   - a symlink in a source is followed only when it resolves to a
//     regular file inside the same source (anything else is refused with
//     ErrUnsafePath); a link to a folder is not descended;
//   - the output is bounded by Limits: its number of files and the sum of
//     their sizes, checked before each file is written; each file a Merge
//     parses is bounded on its own (MaxMergeBytes), far below the rest.
//
// The meanings follow Flux's source-watcher, as cp has them: "@src/dir/"
// copies the folder dir into the destination, "@src/dir/**" its contents,
// "@src/*.yaml" the matching files; a destination ending in "/" is a
// folder, otherwise a single file's new path. Exclude patterns match the
// path below the non-glob prefix of "from", or, without a "/", a file
// name at any depth. Merge merges a YAML map into the one already at the
// destination as Helm merges values files.
//
// ParsePattern, Match and Expand serve spec.pathPattern: a folder pattern
// of literal segments and "{name}" captures (each within one segment) is
// matched against the folders of a source's tree, never deeper than the
// pattern and never through a symlink, with a bound on the matches; and
// "{name}" placeholders of names and copy paths are filled in, a name
// that is not a capture being an error rather than left in place.
package compose
