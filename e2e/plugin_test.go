package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/e2e/localenv"
)

// TestTheSamplesPluginPartIsApplied: the sample's plugin part, as `make
// run` deploys it — the Kustomization demo-plugin, rendered by the
// example plugin the launcher runs on a socket in render-controller's
// --plugin-dir — becomes Ready, and the objects the plugin made of the
// repository's plugin/ folder, with spec.plugin.env filled in, are on the
// API server.
func TestTheSamplesPluginPartIsApplied(t *testing.T) {
	g := NewWithT(t)
	g.Expect(env.Plugin).NotTo(BeNil(), "the launcher runs the example plugin")
	s := deployDemo(t, localenv.DemoOptions{Namespace: "e2e-plugin", AppNamespace: "e2e-plugin-app", Repo: "e2e-plugin", Plugin: true})
	head, err := s.clone.Head(s.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	waitApplied(s.ctx, t, types.NamespacedName{Namespace: "e2e-plugin", Name: "demo-plugin"}, revision(head))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(s.ctx, types.NamespacedName{Namespace: "e2e-plugin-app", Name: "greeting"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{
		"greeting":    "hello from a config-management plugin",
		"rendered-by": "the envsubst plugin",
	}))
}
