package cmd

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// readyWhenCreated plays the controller of an object `plumb create`
// writes: once obj exists it reports Reconciling, then the outcome, for
// its generation, through the status subresource (write as standIn's,
// with no request token). It stops with the test.
func readyWhenCreated[T client.Object](t *testing.T, obj T, result outcome, write func(o T, token string, reconciling bool, r outcome)) {
	t.Helper()
	readyAtGeneration(t, obj, 1, result, write)
}

// readyAtGeneration is readyWhenCreated for an object that exists: it
// answers once obj's generation reaches gen.
func readyAtGeneration[T client.Object](t *testing.T, obj T, gen int64, result outcome, write func(o T, token string, reconciling bool, r outcome)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for _, reconciling := range []bool{true, false} {
			for ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
				o := obj.DeepCopyObject().(T)
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), o); err != nil || o.GetGeneration() < gen {
					continue
				}
				write(o, "", reconciling, result)
				if env.Client.Status().Update(ctx, o) == nil {
					break
				}
			}
		}
	}()
}

// managedByPlumb says whether the object's fields were applied by
// `plumb create`'s field manager.
func managedByPlumb(obj client.Object) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == createFieldManager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// create source git with credentials applies their Secret, then the
// GitRepository naming it, and waits for the controller's Ready.
func TestCreateSourceGitAppliesTheSecretAndWaitsForReady(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	const rev = "main@sha1:4444444444444444444444444444444444444444"
	readyWhenCreated(t, gitRepo(ns, "app"), outcome{ready: true, message: "stored artifact", revision: rev}, writeGitRepository)

	r := plumb("create", "source", "git", "app", "--url=https://git.example.com/org/app.git", "--branch=main",
		"--username=u", "--password=p", "--label=team=a", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[:2]).To(Equal([]string{"✚ Secret/" + ns + "/app applied", "✚ GitRepository/" + ns + "/app applied"}))
	g.Expect(out[len(out)-1]).To(Equal("✔ GitRepository/" + ns + "/app reconciled, revision " + rev))

	repo := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, repo)).To(Succeed())
	g.Expect(repo.Spec.SecretRef).To(Equal(&meta.LocalObjectReference{Name: "app"}))
	g.Expect(repo.Spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Branch: "main"}))
	g.Expect(repo.Labels).To(HaveKeyWithValue("team", "a"))
	g.Expect(managedByPlumb(repo)).To(BeTrue(), "managed fields: %v", repo.ManagedFields)
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"username": []byte("u"), "password": []byte("p")}))
	g.Expect(managedByPlumb(secret)).To(BeTrue())
}

// create kustomization waits for Ready=True (exit 0) and reports
// Ready=False as a negative answer (exit 1), with the controller's
// message.
func TestCreateKustomizationWaitsForItsOutcome(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	const rev = "main@sha1:5555555555555555555555555555555555555555"
	readyWhenCreated(t, kustomization(ns, "apps", "app"), outcome{ready: true, message: "applied", revision: rev}, writeKustomization)
	readyWhenCreated(t, kustomization(ns, "broken", "app"), outcome{ready: false, message: "kustomization path not found"}, writeKustomization)

	r := plumb("create", "kustomization", "apps", "--source=app", "--path=./deploy", "--prune", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(ContainElement("✔ Kustomization/" + ns + "/apps reconciled, revision " + rev))
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, ks)).To(Succeed())
	g.Expect(ks.Spec.SourceRef).To(Equal(kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}))
	g.Expect(ks.Spec.Path).To(Equal("./deploy"))
	g.Expect(ks.Spec.Prune).To(BeTrue())

	r = plumb("create", "kustomization", "broken", "--source=app", "--path=./missing", "-n", ns)
	g.Expect(r.code).To(Equal(ExitNegative), r.String())
	g.Expect(r.errOut).To(ContainSubstring("Kustomization/" + ns + "/broken is not ready: kustomization path not found"))
}

// A create of an object that exists updates the fields the flags set and
// waits for the controller's answer to the new generation, not the Ready
// it had before.
func TestCreateAgainWaitsForTheNewGeneration(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "apps", "app")
	create(ctx, t, ks)
	setStatus(ctx, t, ks, func(o *kustomizev1.Kustomization) {
		o.Status.ObservedGeneration = o.Generation
		o.Status.LastAppliedRevision = "main@sha1:old"
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "applied", o.Generation)}
	})
	const rev = "main@sha1:6666666666666666666666666666666666666666"
	readyAtGeneration(t, kustomization(ns, "apps", "app"), 2, outcome{ready: true, message: "applied", revision: rev}, writeKustomization)

	r := plumb("create", "kustomization", "apps", "--source=app", "--path=./new", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(ContainElement("✔ Kustomization/" + ns + "/apps reconciled, revision " + rev))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, got)).To(Succeed())
	g.Expect(got.Generation).To(Equal(int64(2)))
	g.Expect(got.Spec.Path).To(Equal("./new"))
	// The flags say the whole spec: no --prune is prune: false.
	g.Expect(got.Spec.Prune).To(BeFalse())
}

// A notification kind keeps no lastHandledReconcileAt: create waits for
// Ready at its generation all the same.
func TestCreateAlertProviderWaitsForReady(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	p := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"}}
	readyWhenCreated(t, p, outcome{ready: true, message: "Initialized"}, func(o *notificationv1.Provider, _ string, reconciling bool, r outcome) {
		o.Status.ObservedGeneration = o.Generation
		status := "Unknown"
		if !reconciling {
			status = "True"
		}
		o.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, status, meta.SucceededReason, r.message, o.Generation)}
	})
	r := plumb("create", "alert-provider", "slack", "--type=slack", "--channel=ops", "--secret-ref=slack-url", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(ContainElement("✔ Provider/" + ns + "/slack reconciled"))
	got := &notificationv1.Provider{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	g.Expect(got.Spec.Type).To(Equal("slack"))
	g.Expect(got.Spec.Channel).To(Equal("ops"))
}

// With no controller to answer, create gives up at --timeout with an
// error that says so; the object it applied stays.
func TestCreateTimesOutWithoutAController(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	r := plumb("create", "source", "git", "app", "--url=https://git.example.com/org/app.git", "--branch=main", "--timeout=3s", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("timed out waiting for GitRepository/" + ns + "/app to reconcile"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &sourcev1.GitRepository{})).To(Succeed())
}

// Flags Flux refuses, and flags for fields Plumb refuses, fail before
// anything is written, each with a message that names the flag.
func TestCreateRefusesBadFlagsAndWritesNothing(t *testing.T) {
	ctx, ns := newNamespace(t)
	known := writeFile(t, "known_hosts", "not a host key line\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"source", "git", "app", "--branch=main"}, "--url is required"},
		{[]string{"source", "git", "app", "--url=ftp://host/repo", "--branch=main"}, `scheme "ftp" is not supported`},
		{[]string{"source", "git", "app", "--url=https://host/repo"}, "a Git reference is required"},
		{[]string{"source", "git", "app", "--url=https://host/repo", "--branch=main", "--interval=often"}, `invalid argument "often" for "--interval"`},
		{[]string{"source", "git", "App_1", "--url=https://host/repo", "--branch=main"}, `name "App_1" is invalid`},
		{[]string{"source", "git", "app", "--url=https://host/repo", "--branch=main", "--label=team"}, `--label "team": want key=value`},
		{[]string{"source", "git", "app", "--url=https://host/repo", "--branch=main", "--provider=azure"}, `--provider "azure": use one of generic, github`},
		{[]string{"source", "git", "app", "--url=ssh://git@host/repo", "--branch=main", "--known-hosts-file=" + known}, "--known-hosts-file: "},
		{[]string{"source", "git", "app", "--url=https://host/repo", "--branch=main", "--secret-ref=s", "--username=u", "--password=p"}, "not both"},
		{[]string{"source", "helm", "app", "--url=ftp://host"}, `scheme "ftp" is not supported`},
		{[]string{"source", "helm", "app", "--url=oci://ghcr.io/org", "--oci-provider=aws"}, "workload identity"},
		{[]string{"source", "oci", "app", "--url=oci://ghcr.io/org/app"}, "--tag, --tag-semver or --digest is required"},
		{[]string{"source", "oci", "app", "--url=oci://ghcr.io/org/app", "--tag=1", "--service-account=puller"}, "--service-account (OCIRepository.spec.serviceAccountName) is not supported: Flux exchanges"},
		{[]string{"source", "oci", "app", "--url=oci://ghcr.io/org/app", "--tag=1", "--verify-provider=cosign", "--verify-subject=me"}, "keyless verification trusts Sigstore"},
		{[]string{"source", "oci", "app", "--url=oci://ghcr.io/org/app", "--tag=1", "--layer-selector=foo"}, "want <media-type>:<operation>"},
		{[]string{"source", "bucket", "app", "--bucket-name=b"}, "--endpoint is required"},
		{[]string{"source", "chart", "app", "--chart=podinfo", "--source=OCIRepository/podinfo"}, `kind "OCIRepository" is not supported`},
		{[]string{"kustomization", "app", "--source=app", "--path=deploy"}, `--path "deploy" must begin with ./`},
		{[]string{"kustomization", "app", "--path=./"}, "--source is required"},
		{[]string{"kustomization", "app", "--source=app", "--path=./", "--health-check=Pod/web.apps"}, `kind "Pod" is not supported`},
		{[]string{"helmrelease", "app", "--source=HelmRepository/podinfo"}, "--chart or --chart-ref is required"},
		{[]string{"helmrelease", "app", "--chart=podinfo", "--source=Bucket/charts"}, `kind "Bucket" is not supported`},
		{[]string{"helmrelease", "app", "--chart=podinfo", "--source=HelmRepository/podinfo", "--crds=Always"}, `--crds "Always"`},
		{[]string{"alert", "app", "--event-source=Kustomization/*"}, "--provider-ref is required"},
		{[]string{"alert", "app", "--provider-ref=slack", "--event-source=Kustomization/*", "--event-severity=warning"}, `--event-severity "warning"`},
		{[]string{"alert-provider", "app", "--type=carrier-pigeon"}, `--type "carrier-pigeon": use one of slack,`},
		{[]string{"receiver", "app", "--type=github", "--resource=GitRepository/app"}, "--secret-ref is required"},
		{[]string{"receiver", "app", "--type=svn", "--secret-ref=s", "--resource=GitRepository/app"}, `--type "svn"`},
		{[]string{"secret", "git", "app", "--url=https://host/repo"}, "give --username and --password, or --bearer-token"},
		{[]string{"secret", "helm", "app", "--tls-crt-file=/nonexistent"}, "go together"},
		{[]string{"secret", "tls", "app", "--ca-crt-file=/nonexistent/ca.crt"}, "--ca-crt-file: open /nonexistent/ca.crt"},
		{[]string{"secret", "oci", "app", "--url=ghcr.io", "--username=u"}, "--password is required"},
		{[]string{"secret", "receiver", "app", "--type=github"}, "--hostname is required"},
		{[]string{"secret", "receiver", "app", "--type=gcr", "--hostname=h"}, "--email-claim is required"},
		{[]string{"secret", "tls", "app", "--ca-crt-file=" + known, "--interval=5m"}, "--interval: a Secret is not reconciled"},
		{[]string{"alert-provider", "app", "--type=slack", "--interval=5m"}, "--interval (Provider.spec.interval) is not supported: deprecated in Flux"},
		{[]string{"receiver", "app", "--type=github", "--secret-ref=s", "--resource=GitRepository/app", "--interval=5m"}, "--interval (Receiver.spec.interval) is not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(append([]string{"create"}, tc.args...), "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitError), r.String())
			g.Expect(r.errOut).To(ContainSubstring(tc.want))
			g.Expect(r.out).To(BeEmpty())
		})
	}
	// Nothing was written: each list succeeds and is empty.
	g := NewWithT(t)
	for _, list := range []client.ObjectList{
		&sourcev1.GitRepositoryList{}, &sourcev1.HelmRepositoryList{}, &sourcev1.OCIRepositoryList{}, &sourcev1.BucketList{},
		&sourcev1.HelmChartList{}, &kustomizev1.KustomizationList{}, &helmv2.HelmReleaseList{}, &notificationv1.AlertList{}, &notificationv1.ProviderList{},
		&notificationv1.ReceiverList{}, &corev1.SecretList{},
	} {
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(listItems(list)).To(BeEmpty(), "%T", list)
	}
}
