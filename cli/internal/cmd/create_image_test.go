package cmd

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
)

// `create image … --export` prints the object Flux's flags describe, and
// that YAML applies as it is: the API server (the CRDs' schemas and CEL
// rules) takes it, and reads back the same spec.
func TestCreateImageExportAppliesAsIs(t *testing.T) {
	ctx, ns := newNamespace(t)
	meta0 := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	const template = "{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}"
	cases := []struct {
		name string
		args []string
		want client.Object
		// defaulted is what the API server adds to want.
		defaulted func(client.Object)
	}{{
		name: "repository",
		args: []string{"repository", "app", "--image=ghcr.io/org/app", "--interval=5m", "--secret-ref=regcred", "--cert-ref=certs",
			"--scan-timeout=2m", "--insecure", `--exclusion-list=^.*\.sig$`, `--exclusion-list=-rc\d{1,3}$`, "--label=team=a"},
		want: &imagev1.ImageRepository{ObjectMeta: meta0("app", map[string]string{"team": "a"}), Spec: imagev1.ImageRepositorySpec{
			Image: "ghcr.io/org/app", Interval: metav1.Duration{Duration: 5 * time.Minute}, Timeout: dur(2 * time.Minute),
			SecretRef: &meta.LocalObjectReference{Name: "regcred"}, CertSecretRef: &meta.LocalObjectReference{Name: "certs"},
			Insecure: true, ExclusionList: []string{`^.*\.sig$`, `-rc\d{1,3}$`},
		}},
	}, {
		name: "policy by semver with a filter",
		args: []string{"policy", "app", "--image-ref=app", "--select-semver=>=1.0.0 <2.0.0", "--filter-regex=^v(?P<version>.*)$", "--filter-extract=$version"},
		want: &imagev1.ImagePolicy{ObjectMeta: meta0("app", nil), Spec: imagev1.ImagePolicySpec{
			ImageRepositoryRef: meta.NamespacedObjectReference{Name: "app"},
			Policy:             imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0 <2.0.0"}},
			FilterTags:         &imagev1.TagFilter{Pattern: "^v(?P<version>.*)$", Extract: "$version"},
		}},
		defaulted: func(o client.Object) { o.(*imagev1.ImagePolicy).Spec.DigestReflectionPolicy = imagev1.ReflectNever },
	}, {
		name: "policy by number with the digest looked up",
		args: []string{"policy", "build", "--image-ref=app.images", "--select-numeric=desc", "--reflect-digest=Always", "--interval=10m"},
		want: &imagev1.ImagePolicy{ObjectMeta: meta0("build", nil), Spec: imagev1.ImagePolicySpec{
			ImageRepositoryRef:     meta.NamespacedObjectReference{Name: "app", Namespace: "images"},
			Policy:                 imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "desc"}},
			DigestReflectionPolicy: imagev1.ReflectAlways, Interval: dur(10 * time.Minute),
		}},
	}, {
		name: "update",
		args: []string{"update", "flux-system", "--git-repo-ref=flux-system", "--git-repo-namespace=flux", "--git-repo-path=./clusters/dev",
			"--checkout-branch=main", "--push-branch=image-updates", "--author-name=plumb", "--author-email=plumb@example.com",
			"--commit-template=" + template, "--signing-key-secret=signing", "--signing-key-type=ssh", "--interval=30m"},
		want: &imagev1.ImageUpdateAutomation{ObjectMeta: meta0("flux-system", nil), Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.GitSourceReference{Kind: "GitRepository", Name: "flux-system", Namespace: "flux"},
			Interval:  metav1.Duration{Duration: 30 * time.Minute},
			Git: imagev1.GitSpec{
				Checkout: &imagev1.GitCheckoutSpec{Ref: imagev1.GitCheckoutRef{Branch: "main"}},
				Commit: imagev1.CommitSpec{
					Author: imagev1.CommitUser{Name: "plumb", Email: "plumb@example.com"}, MessageTemplate: template,
					SigningKey: &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}, Type: imagev1.SigningKeyTypeSSH},
				},
				Push: &imagev1.PushSpec{Branch: "image-updates"},
			},
			Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "./clusters/dev"},
		}},
	}, {
		name: "update of the whole repository",
		args: []string{"update", "all", "--git-repo-ref=apps", "--checkout-branch=main", "--author-name=plumb", "--author-email=plumb@example.com"},
		want: &imagev1.ImageUpdateAutomation{ObjectMeta: meta0("all", nil), Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.GitSourceReference{Kind: "GitRepository", Name: "apps"},
			Interval:  metav1.Duration{Duration: time.Minute},
			Git: imagev1.GitSpec{
				Checkout: &imagev1.GitCheckoutSpec{Ref: imagev1.GitCheckoutRef{Branch: "main"}},
				Commit:   imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "plumb", Email: "plumb@example.com"}},
			},
		}},
		defaulted: func(o client.Object) {
			o.(*imagev1.ImageUpdateAutomation).Spec.Update = &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append(append([]string{"create", "image"}, tc.args...), "--export", "-n", ns)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			got := exportedObjects(t, r.out)
			g.Expect(got).To(HaveLen(1))
			g.Expect(got[0]).To(Equal(tc.want), r.out)

			// Applied as printed, it is what the API server stores.
			u := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal([]byte(r.out), &u.Object)).To(Succeed())
			g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"))).To(Succeed())
			stored := tc.want.DeepCopyObject().(client.Object)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tc.want), stored)).To(Succeed())
			want := tc.want.DeepCopyObject().(client.Object)
			if tc.defaulted != nil {
				tc.defaulted(want)
			}
			g.Expect(specOf(stored)).To(Equal(specOf(want)))
		})
	}
}

// specOf is an image object's spec.
func specOf(o client.Object) any {
	switch o := o.(type) {
	case *imagev1.ImageRepository:
		return o.Spec
	case *imagev1.ImagePolicy:
		return o.Spec
	case *imagev1.ImageUpdateAutomation:
		return o.Spec
	}
	return nil
}

// Flags image-controller would refuse, or whose field Plumb lacks, fail
// before anything is printed or written.
func TestCreateImageRefusesWhatWouldNotWork(t *testing.T) {
	g := NewWithT(t)
	update := []string{"update", "u", "--git-repo-ref=apps", "--checkout-branch=main", "--author-name=plumb", "--author-email=plumb@example.com"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"repository", "r"}, "--image is required"},
		{[]string{"repository", "r", "--image=ghcr.io/org/app:1.0"}, `--image "ghcr.io/org/app:1.0" is not an image repository`},
		{[]string{"repository", "r", "--image=ghcr.io/org/app", "--exclusion-list=("}, `--exclusion-list "("`},
		{[]string{"repository", "r", "--image=ghcr.io/org/app", "--scan-timeout=2h"}, "less than an hour"},
		{[]string{"policy", "p"}, "--image-ref is required"},
		{[]string{"policy", "p", "--image-ref=app"}, "a policy is required"},
		{[]string{"policy", "p", "--image-ref=app", "--select-semver=1.x", "--select-alpha=asc"}, "give one of --select-semver, --select-alpha and --select-numeric"},
		{[]string{"policy", "p", "--image-ref=app", "--select-alpha=up"}, `--select-alpha "up": use one of asc, desc`},
		{[]string{"policy", "p", "--image-ref=GitRepository/app", "--select-numeric=asc"}, `kind "GitRepository" is not supported`},
		{[]string{"policy", "p", "--image-ref=app", "--select-numeric=asc", "--filter-extract=$1"}, "--filter-extract needs --filter-regex"},
		{[]string{"policy", "p", "--image-ref=app", "--select-numeric=asc", "--filter-regex=^(?P<ts>[0-9]+)$", "--filter-extract=$t"}, `--filter-regex has no group named "t"`},
		{[]string{"policy", "p", "--image-ref=app", "--select-numeric=asc", "--filter-regex=^([0-9]+)$", "--filter-extract=${2}"}, "--filter-regex has no group 2"},
		{[]string{"policy", "p", "--image-ref=app", "--select-numeric=asc", "--filter-regex=^(["}, `--filter-regex "^(["`},
		{[]string{"policy", "p", "--image-ref=app", "--select-semver=1.x", "--interval=5m"}, "it needs --reflect-digest=Always"},
		{[]string{"policy", "p", "--image-ref=app", "--select-semver=1.x", "--reflect-digest=Sometimes"}, `--reflect-digest "Sometimes": use one of Never, IfNotPresent, Always`},
		{[]string{"update", "u", "--git-repo-ref=apps", "--author-name=plumb", "--author-email=plumb@example.com"}, "--checkout-branch is required"},
		{[]string{"update", "u", "--git-repo-ref=apps", "--checkout-branch=main", "--author-name=plumb"}, "--author-email is required"},
		{append(update, "--signing-key-secret=key", "--signing-key-type=x509"), `--signing-key-type "x509": use one of gpg, ssh`},
		{append(update, "--signing-key-type=ssh"), "--signing-key-type needs --signing-key-secret"},
		{append(update, `--commit-template={{define "x"}}{{end}}`), "--commit-template: {{define}} and {{block}} are not supported"},
	} {
		r := plumb(append(append([]string{"create", "image"}, tc.args...), "--export", "-n", "team-a")...)
		g.Expect(r.code).To(Equal(ExitError), "%v\n%s", tc.args, r)
		g.Expect(r.errOut).To(ContainSubstring(tc.want), strings.Join(tc.args, " "))
		g.Expect(r.out).To(BeEmpty())
	}
}

// Without --export, create applies the object and waits for
// image-controller's Ready, then says what the scan found.
func TestCreateImageRepositoryWaitsForTheScan(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	readyWhenCreated(t, imageRepo(ns, "app"), outcome{ready: true, message: "successful scan: found 7 tags"}, writeImageRepository)

	r := plumb("create", "image", "repository", "app", "--image=ghcr.io/org/app", "--interval=5m", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)[0]).To(Equal("✚ ImageRepository/" + ns + "/app applied"))
	g.Expect(lines(r.out)).To(ContainElement("✔ ImageRepository/" + ns + "/app reconciled, scan found 7 tags"))
	repo := &imagev1.ImageRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, repo)).To(Succeed())
	g.Expect(repo.Spec.Image).To(Equal("ghcr.io/org/app"))
	g.Expect(managedByPlumb(repo)).To(BeTrue(), "managed fields: %v", repo.ManagedFields)
}
