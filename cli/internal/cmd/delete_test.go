package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
)

// plumbWithInput runs the command line with in as its standard input, as
// a person answering a prompt would.
func plumbWithInput(ctx context.Context, in string, args ...string) result {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(in))
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	code := ExitOK
	if err := root.ExecuteContext(ctx); err != nil {
		code = ExitError
		if ee, ok := err.(*exitError); ok {
			code = ee.code
		}
		errOut.WriteString(err.Error())
	}
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

// gone says whether obj no longer exists; any other error than NotFound
// fails the test, so that a broken read never passes for a deletion.
func gone(ctx context.Context, t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return apierrors.IsNotFound(err)
}

func TestDeleteAsksFirst(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := gitRepo(ns, "podinfo")
	create(ctx, t, repo)

	// Anything but yes keeps the object: "n", an empty line, no input.
	for _, answer := range []string{"n\n", "\n", "", "maybe\n"} {
		r := plumbWithInput(ctx, answer, "delete", "source", "git", "podinfo", "-n", ns)
		g.Expect(r.code).To(Equal(ExitNegative), r.String())
		g.Expect(r.out).To(ContainSubstring("Are you sure you want to delete this GitRepository (GitRepository/" + ns + "/podinfo)? [y/N]"))
		g.Expect(r.errOut).To(ContainSubstring("aborted: GitRepository/" + ns + "/podinfo was not deleted"))
		g.Expect(gone(ctx, t, repo)).To(BeFalse(), "answered %q", answer)
	}

	r := plumbWithInput(ctx, "Y\n", "delete", "gitrepository", "podinfo", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ GitRepository/" + ns + "/podinfo deleted"))
	g.Expect(gone(ctx, t, repo)).To(BeTrue())

	r = plumbWithInput(ctx, "y\n", "delete", "source", "git", "podinfo", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("GitRepository podinfo not found in namespace " + ns))
}

func TestDeleteSilentlyEveryKind(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: "generic", Address: "https://hooks.example.com/x"},
	}
	ks := kustomization(ns, "app", "app")
	create(ctx, t, provider, ks)

	// --silent reads no answer: the input here would refuse.
	r := plumbWithInput(ctx, "n\n", "delete", "alert-provider", "slack", "-n", ns, "--silent")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).NotTo(ContainSubstring("Are you sure"))
	g.Expect(gone(ctx, t, provider)).To(BeTrue())

	r = plumbWithInput(ctx, "", "delete", "ks", "app", "-n", ns, "--silent")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(gone(ctx, t, ks)).To(BeTrue())

	r = plumb("delete", "nosuchkind", "x")
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring(`unknown kind "nosuchkind"`))
}

// A Kustomization that prunes says what its deletion takes with it; one
// held by a finalizer is marked, and --wait waits for it to be gone.
func TestDeleteSaysWhatGoesWithIt(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	ks.Finalizers = []string{"plumb.dev/test-hold"}
	kept := kustomization(ns, "kept", "app")
	kept.Spec.Prune = false
	create(ctx, t, ks, kept)
	inventory := &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "a"}, {Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "b"},
	}}
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) { o.Status.Inventory = inventory })
	setStatus(ctx, t, kept, func(o *kustomizev1.Kustomization) { o.Status.Inventory = inventory })

	r := plumbWithInput(ctx, "n\n", "delete", "kustomization", "kept", "-n", ns)
	g.Expect(r.out).To(ContainSubstring("◎ Kustomization/" + ns + "/kept does not prune: the 2 objects it manages stay in the cluster"))

	r = plumbWithInput(ctx, "yes\n", "delete", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(r.out).To(ContainSubstring("◎ Kustomization/" + ns + "/app prunes (spec.prune): the 2 objects it manages are deleted too"))
	g.Expect(r.out).To(ContainSubstring("✔ Kustomization/" + ns + "/app marked for deletion; it goes once its finalizers are done (plumb.dev/test-hold)"))
	g.Expect(gone(ctx, t, ks)).To(BeFalse())

	// The finalizer's controller finishes while delete --wait waits.
	out := &syncBuffer{}
	done := make(chan int)
	go func() {
		root := newRoot(out, out)
		root.SetArgs([]string{"--kubeconfig", kubeconfig, "delete", "kustomization", "app", "-n", ns, "--wait"})
		err := root.ExecuteContext(ctx)
		if err != nil {
			out.Write([]byte(err.Error()))
			done <- ExitError
			return
		}
		done <- ExitOK
	}()
	g.Eventually(out.String, "30s").Should(ContainSubstring("◎ waiting for Kustomization/" + ns + "/app to be gone"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	ks.Finalizers = nil
	g.Expect(env.Client.Update(ctx, ks)).To(Succeed())
	g.Expect(<-done).To(Equal(ExitOK), out.String())
	g.Expect(out.String()).To(ContainSubstring("is already being deleted (finalizers: plumb.dev/test-hold)"))
	g.Expect(out.String()).To(ContainSubstring("✔ Kustomization/" + ns + "/app deleted"))
	g.Expect(gone(ctx, t, ks)).To(BeTrue())
}
