package cmd

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
)

// complete asks the command line for the completions of args (the last
// one being typed), as the shell scripts do through the hidden
// __complete command, and returns them without the directive line.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	var out, errOut strings.Builder
	code := Run(context.Background(), append([]string{"__complete", "--kubeconfig", kubeconfig}, args...), &out, &errOut)
	if code != ExitOK {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut.String())
	}
	var got []string
	for _, l := range lines(out.String()) {
		if !strings.HasPrefix(l, ":") {
			got = append(got, l)
		}
	}
	return got
}

func TestCompletionOfKindsAndNames(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "podinfo"), gitRepo(ns, "platform"), gitRepo(ns, "apps"),
		kustomization(ns, "podinfo", "podinfo"),
		&notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
			Spec: notificationv1.ProviderSpec{Type: "generic", Address: "https://hooks.example.com/x"}})

	// Kinds first, among those the command takes.
	g.Expect(complete(t, "reconcile", "")).To(ContainElements("source", "kustomization", "helmrelease", "receiver", "alert", "provider"))
	g.Expect(complete(t, "reconcile", "")).NotTo(ContainElement("externalartifact"))
	g.Expect(complete(t, "delete", "")).To(ContainElement("externalartifact"))
	g.Expect(complete(t, "get", "a")).To(Equal([]string{"alert", "all", "artifactgenerator"}))
	g.Expect(complete(t, "tree", "")).To(Equal([]string{"helmrelease", "kustomization"}))
	g.Expect(complete(t, "suspend", "source", "")).To(Equal([]string{"bucket", "chart", "git", "helm", "oci"}))

	// Then the names of that kind's objects in the namespace.
	for _, cmd := range [][]string{
		{"get", "source", "git"}, {"reconcile", "source", "git"}, {"delete", "gitrepository"},
		{"suspend", "gitrepo"}, {"resume", "source", "git"}, {"export", "source", "git"},
	} {
		g.Expect(complete(t, append(append(cmd, "-n", ns), "p")...)).To(Equal([]string{"platform", "podinfo"}), "%v", cmd)
	}
	g.Expect(complete(t, "diff", "kustomization", "-n", ns, "")).To(Equal([]string{"podinfo"}))
	g.Expect(complete(t, "delete", "alert-provider", "-n", ns, "")).To(Equal([]string{"slack"}))
	// Nothing after the NAME.
	g.Expect(complete(t, "delete", "alert-provider", "slack", "-n", ns, "")).To(BeEmpty())
	// -n completes namespaces.
	g.Expect(complete(t, "get", "sources", "-n", ns[:len(ns)-1])).To(ContainElement(ns))
}

// Cobra's completion command writes each shell's script.
func TestCompletionScripts(t *testing.T) {
	g := NewWithT(t)
	for shell, marker := range map[string]string{
		"bash": "__start_plumb", "zsh": "#compdef plumb", "fish": "complete -c plumb", "powershell": "Register-ArgumentCompleter",
	} {
		r := plumb("completion", shell)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		g.Expect(r.out).To(ContainSubstring(marker), shell)
	}
}
