// Package version holds the version and commit a Plumb program was built
// from. Both are set at link time by the image build (make images), e.g.
//
//	-ldflags "-X plumb.dev/pkg/version.Version=v0.4.0 -X plumb.dev/pkg/version.Commit=<sha>"
//
// and read by the programs (their start-up log line, the plumb CLI's
// `version` command). A build without those flags (go build, go test, make
// run) reports "dev" and the VCS revision Go stamped into the binary, when
// there is one.
package version
