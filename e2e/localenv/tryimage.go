package localenv

import (
	"fmt"
	"strings"

	"plumb.dev/pkg/imagebuild"
)

// ImageTryCommands are the "Try:" lines of the sample's image automation
// (DemoOptions.ImageAutomation): CI's two steps after a build, a new tag
// in the registry (plumb tag image, when cli is set) and the registry's
// push webhook to the Receiver "registry", in Docker Hub's format. The
// ImagePolicy picks tag when it is the highest semver; the automation
// then commits it and the Deployment rolls out.
func (e *Env) ImageTryCommands(d *Demo, cli, tag string) []TryCommand {
	var out []TryCommand
	if cli != "" {
		out = append(out, TryCommand{
			fmt.Sprintf("%s tag image %s:%s --tag=%s --insecure-registry", cli, d.WebImage, imagebuild.ExampleVersion, tag),
			"a new tag of the example web image in the local registry, as CI pushes one",
		})
	}
	out = append(out, TryCommand{
		fmt.Sprintf(`curl -fsS -X POST -H 'Content-Type: application/json' -d '%s' %s`, RegistryPushPayload(d.WebImage, tag), d.RegistryWebhookURL),
		"the registry's webhook: scan, policy, signed commit by " + DemoBotName + ", apply",
	})
	return out
}

// RegistryPushPayload is a Docker Hub push webhook's body for image (a
// repository without a tag) and tag: what the registry Receiver reads.
func RegistryPushPayload(image, tag string) string {
	repo := image
	if i := strings.Index(image, "/"); i >= 0 {
		repo = image[i+1:]
	}
	return fmt.Sprintf(`{"push_data":{"tag":%q},"repository":{"repo_name":%q}}`, tag, repo)
}
