package imagebuild

import "strings"

// Program is one image PushLocal makes.
type Program struct {
	// Name is the image's name under the registry: "source-controller",
	// "examples/web".
	Name string
	// Package is its main package as `go build` takes it from the
	// repository root, or a module's package path; its last element
	// (before a /vN major version) is the binary and entrypoint.
	Package string
	// Sources are the folders and files, relative to the root, whose
	// content the image is made of besides the workspace's go.work and
	// go.mod files and this builder, which every key holds; the cache key
	// hashes them. TestProgramSourcesCoverWhatTheyImport keeps them true.
	Sources []string
	// VersionPackage is where the linker sets Version and Commit; empty
	// for plumb.dev/pkg/version.
	VersionPackage string
	// Version, when set, is the program's own version, in place of the
	// build's: the examples are versions of the sample app, not of Plumb.
	Version string
}

// Binary is the program's file name in its image, /<Binary>.
func (p Program) Binary() string { return binaryName(p.Package) }

// PlumbPrograms are Plumb's five images, as `make images` builds them.
var PlumbPrograms = []Program{
	plumbProgram("source-controller"),
	plumbProgram("render-controller"),
	plumbProgram("sync-controller"),
	plumbProgram("notification-controller"),
	plumbProgram("ui"),
}

// PluginPrograms are the example config-management plugin's image
// (pkg/renderplugin/example/envsubst, docs/design/plugins.md), which
// deploy/components/plugins runs as render-controller's sidecar under
// this name. `make images` builds it with Plumb's version, as it builds
// the controllers; its binary, /envsubst, runs as the same non-root user
// and needs nothing of its root file system.
var PluginPrograms = []Program{{
	Name:    PluginImage,
	Package: "./pkg/renderplugin/example/envsubst",
	Sources: []string{"api", "pkg"},
}}

// PluginImage is the example plugin's image name, the one
// deploy/components/plugins names.
const PluginImage = "plumb-plugin-envsubst"

// Every program's module requires api and pkg and no other module of the
// workspace (go list -deps says so; the test checks it).
func plumbProgram(name string) Program {
	return Program{Name: name, Package: "./" + name, Sources: []string{name, "api", "pkg"}}
}

// The example app's images (deploy/examples/images) and the names the
// sample gives them (deploy/examples/app, deploy/examples/helm/hello): a
// neutral repository no registry serves, that a user, or the launcher,
// points at a real one with a kustomize images: entry or a Helm value.
const (
	// ExampleVersion is the sample app's version: its images' tag and the
	// version the web page shows.
	ExampleVersion = "1.0.0"
	// ExampleRepository is the sample's image names' prefix:
	// plumb.dev/examples/web and plumb.dev/examples/hook.
	ExampleRepository = "plumb.dev/examples"
)

// ExamplePrograms are the example app's web server and migration hook,
// pushed as <registry>/examples/web and <registry>/examples/hook, tagged
// ExampleVersion. They import only the standard library.
var ExamplePrograms = []Program{
	exampleProgram(ExampleNames[0]),
	exampleProgram(ExampleNames[1]),
}

func exampleProgram(name string) Program {
	dir := "deploy/examples/images/" + name
	return Program{
		Name:           "examples/" + name,
		Package:        "./" + dir,
		Sources:        []string{dir},
		VersionPackage: "main",
		Version:        ExampleVersion,
	}
}

// ExampleImage is the repository (no tag) of the example image name
// ("web", "hook") in registry, where PushLocal puts it; with no registry,
// the sample's own neutral name, plumb.dev/examples/<name>.
func ExampleImage(registry, name string) string {
	if registry == "" {
		return ExampleRepository + "/" + name
	}
	return strings.TrimSuffix(registry, "/") + "/examples/" + name
}

// ExampleNames are the example images' names, as ExampleImage takes them.
var ExampleNames = []string{"web", "hook"}
