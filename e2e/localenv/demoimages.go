package localenv

import (
	"fmt"
	"strings"

	"plumb.dev/pkg/imagebuild"
)

// The sample names its images plumb.dev/examples/web and
// plumb.dev/examples/hook (imagebuild.ExampleRepository), which no
// registry serves: the pod simulator pulls nothing, and a real node is
// pointed at the registry holding them (imagebuild.PushLocal) the way a
// user points a copy of the sample at theirs: an images: entry in the
// kustomization for the app, and Helm values in the HelmRelease for the
// chart.

// PointDemoImages adds to the sample's kustomization.yaml, in files as
// DemoAppFiles returns them, an images: entry per example image that
// renames it to its copy in registry (the Registry given to
// imagebuild.PushLocal); the tag stays the sample's. An empty registry
// leaves the files as they are.
func PointDemoImages(files map[string]string, registry string) error {
	if registry == "" {
		return nil
	}
	k, ok := files["kustomization.yaml"]
	if !ok {
		return fmt.Errorf("%s has no kustomization.yaml to point the images from", DemoAppDir)
	}
	if strings.Contains(k, "\nimages:") {
		return fmt.Errorf("%s/kustomization.yaml has an images: list already; the launcher would replace it", DemoAppDir)
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(k, "\n"))
	b.WriteString("\n# The example images from the launcher's registry.\nimages:\n")
	for _, name := range imagebuild.ExampleNames {
		fmt.Fprintf(&b, "  - name: %s\n    newName: %s\n", imagebuild.ExampleImage("", name), imagebuild.ExampleImage(registry, name))
	}
	files["kustomization.yaml"] = b.String()
	return nil
}

// demoImageVars are the variables of DemoHelmObjectsFile that name the
// chart's images: the HelmRelease's values image.web and image.hook.
func demoImageVars(registry string) map[string]string {
	return map[string]string{
		"WEB_IMAGE":  imagebuild.ExampleImage(registry, "web"),
		"HOOK_IMAGE": imagebuild.ExampleImage(registry, "hook"),
	}
}
