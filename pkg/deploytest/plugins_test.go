package deploytest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plumb.dev/pkg/imagebuild"
)

// TestPluginsComponent renders deploy/ with components/plugins as a
// user's overlay would: the plugin is a sidecar of render-controller,
// non-root with a read-only root file system, and its socket is in the
// folder render-controller's --plugin-dir names, on a volume both mount.
func TestPluginsComponent(t *testing.T) {
	g := NewWithT(t)
	objs, err := build(filepath.Join("testdata", "plugins"))
	g.Expect(err).NotTo(HaveOccurred())
	dep := typed[appsv1.Deployment](t, find(objs, "Deployment", "render-controller"))
	spec := dep.Spec.Template.Spec
	var manager, plugin *corev1.Container
	for i := range spec.Containers {
		switch spec.Containers[i].Name {
		case "manager":
			manager = &spec.Containers[i]
		case "plugin-envsubst":
			plugin = &spec.Containers[i]
		}
	}
	g.Expect(manager).NotTo(BeNil())
	g.Expect(plugin).NotTo(BeNil())
	g.Expect(manager.Args).To(ContainElement("--plugin-dir=/plugins"))
	g.Expect(plugin.Args).To(ContainElement("--socket=/plugins/envsubst.sock"))
	mountOf := func(c *corev1.Container, path string) string {
		i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		if i < 0 {
			return ""
		}
		return c.VolumeMounts[i].Name
	}
	g.Expect(mountOf(manager, "/plugins")).NotTo(BeEmpty())
	g.Expect(mountOf(plugin, "/plugins")).To(Equal(mountOf(manager, "/plugins")), "both containers share the socket folder")
	vol := spec.Volumes[slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mountOf(manager, "/plugins") })]
	g.Expect(vol.EmptyDir).NotTo(BeNil())
	// The plugin's temporary folder is its own, not the manager's.
	g.Expect(mountOf(plugin, "/tmp")).NotTo(BeEmpty())
	g.Expect(mountOf(plugin, "/tmp")).NotTo(Equal(mountOf(manager, "/tmp")))
	sc := plugin.SecurityContext
	g.Expect(sc).NotTo(BeNil())
	g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
	// The image make images builds beside the controllers', named as
	// deploy/ names theirs: the same registry and tag.
	g.Expect(plugin.Image).To(Equal(strings.Replace(manager.Image, "/render-controller:", "/"+imagebuild.PluginImage+":", 1)))
	g.Expect(plugin.Image).NotTo(Equal(manager.Image))
}
