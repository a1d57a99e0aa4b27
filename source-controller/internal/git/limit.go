package git

// DefaultMaxSize bounds the disk one checkout may use when no limit is given
// (--max-repository-size): 1 GiB holds the largest tree render-controller
// extracts by default (500 MiB, artifact.DefaultMaxExtractedBytes) plus the
// Git objects of a shallow fetch of it, which are no larger. A bare commit
// fetches every branch's history and may need more. The budget itself is
// plumb.dev/pkg/diskbudget.
const DefaultMaxSize int64 = 1 << 30
