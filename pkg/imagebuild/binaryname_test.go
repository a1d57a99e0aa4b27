package imagebuild

import "testing"

// A program's binary, and so its image's entrypoint, is named as `go
// install` names it: a module's major version suffix is not the name.
func TestTheBinaryIsNamedAsGoInstallNamesIt(t *testing.T) {
	for pkg, want := range map[string]string{
		"./source-controller":                   "source-controller",
		"./deploy/examples/images/web":          "web",
		"github.com/nats-io/nats-server/v2":     "nats-server",
		"example.com/tool/v10":                  "tool",
		"example.com/v1":                        "v1",
		"./v2":                                  "v2",
		"github.com/nats-io/nats-server/v2/cmd": "cmd",
	} {
		if got := binaryName(pkg); got != want {
			t.Errorf("binaryName(%q) = %q, want %q", pkg, got, want)
		}
	}
}
