package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/testenv"
)

func TestDiffOfALocalCheckout(t *testing.T) {
	ctx, ns := newNamespace(t)
	srv := testenv.NewArtifactServer(t)
	const token = "tok-5e0c2a77f1"
	create(ctx, t, gitRepo(ns, "repo"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, StringData: map[string]string{"api_token": token}})
	ks := kustomization(ns, "app", "repo")
	ks.Spec.Path = "app"
	ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "vars"}}}
	create(ctx, t, ks)

	cm := func(name, data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
	}
	// What the cluster runs: render-controller's render of main, synced.
	live := cm("settings", "  mode: fast\n") + "---\n" +
		cm("client", "  url: https://api.example/?token="+token+"\n") + "---\n" +
		cm("old", "  a: b\n")
	a := srv.ServeRendered("kustomization", ns, "app", "main@sha1:8888888888888888888888888888888888888888", []byte(live))
	syncAsController(ctx, t, ks, a, []byte(live))

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"app/settings.yaml": cm("settings", "  mode: fast\n"),
		"app/client.yaml":   cm("client", "  url: https://api.example/?token=${api_token}\n"),
		"app/old.yaml":      cm("old", "  a: b\n"),
	})

	t.Run("a checkout equal to what runs changes nothing", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("diff", "ks", "app", "-n", ns, "--path", dir)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{
			"Comparing Kustomization/" + ns + "/app with the checkout " + dir + " (live → checkout)",
			"✔ no drift: 3 objects match Git",
		}))
	})

	t.Run("a pull request's changes: a field, a new object, a pruned one, a secret value", func(t *testing.T) {
		g := NewWithT(t)
		pr := t.TempDir()
		writeTree(t, pr, map[string]string{
			"app/settings.yaml": cm("settings", "  mode: slow\n"),
			"app/client.yaml":   cm("client", "  url: https://api.example/v2?token=${api_token}\n"),
			"app/extra.yaml":    cm("extra", "  b: \"2\"\n"),
		})
		r := plumb("diff", "ks", "app", "-n", ns, "--path", pr)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(lines(r.out)).To(Equal([]string{
			"Comparing Kustomization/" + ns + "/app with the checkout " + pr + " (live → checkout)",
			"~ ConfigMap/" + ns + "/client",
			`    data.url: "<redacted>" → "<redacted>"`,
			"+ ConfigMap/" + ns + "/extra (not in the cluster; a sync creates it)",
			"~ ConfigMap/" + ns + "/settings",
			`    data.mode: "fast" → "slow"`,
			"- ConfigMap/" + ns + "/old (no longer in Git; a sync prunes it)",
			"2 changed, 1 to create, 1 to prune, 0 unchanged",
		}))
		g.Expect(r.out + r.errOut).NotTo(ContainSubstring(token))

		// Nothing was written: the live objects are as they were.
		var settings corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, &settings)).To(Succeed())
		g.Expect(settings.Data).To(Equal(map[string]string{"mode": "fast"}))
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "extra"}, &corev1.ConfigMap{})).To(MatchError(ContainSubstring("not found")))
	})

	t.Run("a checkout that does not render is an error", func(t *testing.T) {
		g := NewWithT(t)
		broken := t.TempDir()
		writeTree(t, broken, map[string]string{"app/kustomization.yaml": "resources: [missing.yaml]\n"})
		r := plumb("diff", "ks", "app", "-n", ns, "--path", broken)
		g.Expect(r.code).To(Equal(ExitError), r.String())
		g.Expect(r.errOut).To(ContainSubstring("the checkout does not render (BuildFailed)"))
	})

	t.Run("without --path it still compares the current render", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb("diff", "ks", "app", "-n", ns)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring("with revision main@sha1:8888888888888888888888888888888888888888 (live → Git)"))
	})
}
