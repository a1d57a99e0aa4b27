package version

import "runtime/debug"

// Set by the linker (-X); see the package comment.
var (
	// Version is the release this program was built as, "dev" when unset.
	Version = "dev"
	// Commit is the Git commit this program was built from.
	Commit = ""
)

// Info is what a program says of its build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
}

// Get returns the version and commit, falling back to the VCS revision Go
// records in the binary when the linker set no commit.
func Get() Info {
	info := Info{Version: Version, Commit: Commit}
	if info.Commit != "" {
		return info
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	return info
}

// String is "v0.4.0 (commit abc1234…)" or "dev".
func (i Info) String() string {
	if i.Commit == "" {
		return i.Version
	}
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	return i.Version + " (commit " + c + ")"
}
