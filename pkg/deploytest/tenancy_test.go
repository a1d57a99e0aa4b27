package deploytest

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
)

// noCrossNamespaceRefs returns what a controller's arguments make of
// --no-cross-namespace-refs: the last occurrence wins, as with pflag.
func noCrossNamespaceRefs(args []string) bool {
	on := false
	for _, a := range args {
		switch {
		case a == "--no-cross-namespace-refs" || a == "--no-cross-namespace-refs=true":
			on = true
		case strings.HasPrefix(a, "--no-cross-namespace-refs="):
			on = false
		}
	}
	return on
}

// TestCrossNamespaceRefsComponent: the install refuses cross-namespace
// references in notification-controller (Receivers, Alerts), and
// components/cross-namespace-refs turns that off for every controller that
// takes the flag.
func TestCrossNamespaceRefsComponent(t *testing.T) {
	g := NewWithT(t)
	base := buildBase(t)
	d := typed[appsv1.Deployment](t, find(base, "Deployment", "notification-controller"))
	g.Expect(noCrossNamespaceRefs(d.Spec.Template.Spec.Containers[0].Args)).To(BeTrue(), "deploy/ sets --no-cross-namespace-refs on notification-controller")
	d = typed[appsv1.Deployment](t, find(base, "Deployment", "source-controller"))
	g.Expect(noCrossNamespaceRefs(d.Spec.Template.Spec.Containers[0].Args)).To(BeTrue(), "deploy/ sets --no-cross-namespace-refs on source-controller (ArtifactGenerators)")

	overlay, err := build(filepath.Join("testdata", "cross-namespace-refs"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"notification-controller", "render-controller", "sync-controller", "source-controller"} {
		d := typed[appsv1.Deployment](t, find(overlay, "Deployment", name))
		g.Expect(noCrossNamespaceRefs(d.Spec.Template.Spec.Containers[0].Args)).To(BeFalse(), name)
	}
}

// lastFlagValue is the value of --name among args as pflag takes it: the
// last occurrence wins.
func lastFlagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

// TestDefaultServiceAccountComponent: the install has a Kustomization or
// HelmRelease that names no ServiceAccount act as its namespace's
// "default" one (no rights unless bound), not as sync-controller, and
// components/single-tenant turns that off.
func TestDefaultServiceAccountComponent(t *testing.T) {
	g := NewWithT(t)
	d := typed[appsv1.Deployment](t, find(buildBase(t), "Deployment", "sync-controller"))
	sa, ok := lastFlagValue(d.Spec.Template.Spec.Containers[0].Args, "default-service-account")
	g.Expect(ok).To(BeTrue(), "deploy/ sets --default-service-account on sync-controller")
	g.Expect(sa).To(Equal("default"))

	overlay, err := build(filepath.Join("testdata", "single-tenant"))
	g.Expect(err).NotTo(HaveOccurred())
	d = typed[appsv1.Deployment](t, find(overlay, "Deployment", "sync-controller"))
	sa, _ = lastFlagValue(d.Spec.Template.Spec.Containers[0].Args, "default-service-account")
	g.Expect(sa).To(BeEmpty(), "components/single-tenant leaves sync-controller acting as itself")
}
