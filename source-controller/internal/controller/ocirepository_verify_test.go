package controller

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/oci/cosigntest"
	"plumb.dev/source-controller/internal/oci/notationtest"
)

func verifyingOCI(obj *sourcev1.OCIRepository, secret string) *sourcev1.OCIRepository {
	obj.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.OCIVerifyCosign, SecretRef: meta.LocalObjectReference{Name: secret}}
	return obj
}

func TestCosignSignaturesDecideWhetherAnOCIRevisionBecomesAnArtifact(t *testing.T) {
	trusted, stranger := cosigntest.NewKey(t), cosigntest.NewKey(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/signed/app"
	signed := pushDir(t, url+":signed", map[string]string{"cm.yaml": configMap("signed")}, nil)
	trusted.Sign(t, url, signed)
	unsigned := pushDir(t, url+":unsigned", map[string]string{"cm.yaml": configMap("unsigned")}, nil)
	foreign := pushDir(t, url+":foreign", map[string]string{"cm.yaml": configMap("foreign")}, nil)
	stranger.Sign(t, url, foreign)
	ns := namespace(t)
	credentials(t, ns, "cosign-keys", map[string]string{"release.pub": string(trusted.PublicPEM)})

	tests := []ociVerifyCase{
		{name: "signed", tag: "signed", secret: "cosign-keys", revision: "signed@" + signed,
			message: "verified cosign signature of revision signed@" + signed + " with key release.pub of spec.verify.secretRef"},
		{name: "unsigned", tag: "unsigned", secret: "cosign-keys", reason: sourcev1.InvalidArtifactSignatureReason,
			message: "revision unsigned@" + unsigned + " refused, no artifact made of it: the artifact " + unsigned +
				" is not signed: " + strings.TrimPrefix(url, "oci://") + " has no cosign signature tag sha256-" + strings.TrimPrefix(unsigned, "sha256:") + ".sig"},
		{name: "signed-by-a-stranger", tag: "foreign", secret: "cosign-keys", reason: sourcev1.InvalidArtifactSignatureReason,
			message: "revision foreign@" + foreign + " refused, no artifact made of it: the artifact " + foreign +
				" has no valid cosign signature by the keys of spec.verify.secretRef: Secret " + ns + "/cosign-keys (signature 1: made by none of the keys)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkOCIVerifyCase(t, ns, url, sourcev1.OCIVerifyCosign, tt)
		})
	}
}

// ociVerifyCase is an OCIRepository with spec.verify and what becomes of
// it.
type ociVerifyCase struct {
	name, tag, secret string
	// revision is the artifact's when verified; "" when refused with
	// reason.
	revision, reason string
	message          string // SourceVerified's message (its start when refused)
}

// checkOCIVerifyCase creates the OCIRepository of tt for the tag of url,
// verified by provider, and checks the outcome: the artifact of the
// content "signed" with SourceVerified=True, or no artifact, nothing
// pulled, SourceVerified=False and Ready=False with the reason, a retry
// and an error event.
func checkOCIVerifyCase(t *testing.T, ns, url, provider string, tt ociVerifyCase) {
	g := NewWithT(t)
	obj := newOCIRepository(ns, provider+"-"+tt.name, url, &sourcev1.OCIRepositoryRef{Tag: tt.tag})
	obj.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: provider, SecretRef: meta.LocalObjectReference{Name: tt.secret}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	if tt.revision != "" {
		waitHelmReady(t, obj, tt.revision)
		verified := conditionOf(obj, sourcev1.SourceVerifiedCondition)
		g.Expect(verified).NotTo(BeNil())
		g.Expect(verified.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(verified.Reason).To(Equal(meta.SucceededReason))
		g.Expect(verified.Message).To(Equal(tt.message))
		g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("signed")}))
		return
	}

	waitHelmFailed(t, obj, tt.reason)
	g.Expect(conditionOf(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
	verified := conditionOf(obj, sourcev1.SourceVerifiedCondition)
	g.Expect(verified).NotTo(BeNil())
	g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(verified.Reason).To(Equal(tt.reason))
	g.Expect(verified.Message).To(HavePrefix(tt.message))
	// Nothing was pulled, let alone stored, of the refused revision.
	g.Expect(obj.Status.Artifact).To(BeNil())
	g.Expect(counterValue(t, "plumb_source_ocirepository_pulls_total", ns, obj.Name)).To(BeZero())
	g.Expect(conditionOf(obj, meta.ReconcilingCondition).Reason).To(Equal(meta.ProgressingWithRetryReason))
	evs := streamEvents(t, events.Subject(sourcev1.OCIRepositoryKind, ns, obj.Name), 1)
	g.Expect(evs[0].Reason).To(Equal(tt.reason))
	g.Expect(evs[0].Severity).To(Equal(events.SeverityError))
	g.Expect(evs[0].Message).To(ContainSubstring(tt.message))
}

// An unsigned push to the followed tag is refused while the verified
// artifact keeps being served; once the push is signed it becomes the
// artifact.
func TestUnsignedOCIRevisionIsRefusedAndTheVerifiedArtifactKept(t *testing.T) {
	g := NewWithT(t)
	trusted := cosigntest.NewKey(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/app"
	first := pushDir(t, url+":latest", map[string]string{"cm.yaml": configMap("one")}, nil)
	trusted.Sign(t, url, first)
	ns := namespace(t)
	credentials(t, ns, "keys", map[string]string{"cosign.pub": string(trusted.PublicPEM)})
	obj := verifyingOCI(newOCIRepository(ns, "app", url, nil), "keys")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	waitHelmReady(t, obj, "latest@"+first)
	good := obj.Status.Artifact.DeepCopy()

	second := pushDir(t, url+":latest", map[string]string{"cm.yaml": configMap("two")}, nil)
	requestHelmReconcile(t, obj, "unsigned")
	waitHelmFailed(t, obj, sourcev1.InvalidArtifactSignatureReason)
	g.Expect(conditionOf(obj, meta.ReadyCondition).Message).To(ContainSubstring("the artifact " + second + " is not signed"))
	g.Expect(conditionOf(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(obj.Status.Artifact).To(Equal(good))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("one")}))

	// The signature is pushed after the artifact, as CI does: a retry
	// sees it without a change to the object.
	trusted.Sign(t, url, second)
	waitHelmReady(t, obj, "latest@"+second)
	g.Expect(conditionOf(obj, sourcev1.SourceVerifiedCondition).Message).To(ContainSubstring("with key cosign.pub"))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": configMap("two")}))
}

// An artifact stored before spec.verify was added is checked again, not
// taken as verified because its revision and generation were seen; and
// removing spec.verify removes the condition.
func TestAddingVerifyToAnOCIRepositoryNeverTakesTheUnverifiedArtifactAsVerified(t *testing.T) {
	g := NewWithT(t)
	trusted := cosigntest.NewKey(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/app"
	digest := pushDir(t, url+":v1", map[string]string{"cm.yaml": configMap("one")}, nil)
	ns := namespace(t)
	credentials(t, ns, "keys", map[string]string{"cosign.pub": string(trusted.PublicPEM)})
	obj := newOCIRepository(ns, "app", url, &sourcev1.OCIRepositoryRef{Tag: "v1"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	waitHelmReady(t, obj, "v1@"+digest)
	good := obj.Status.Artifact.DeepCopy()
	g.Expect(conditionOf(obj, sourcev1.SourceVerifiedCondition)).To(BeNil())

	patch := client.MergeFrom(obj.DeepCopy())
	verifyingOCI(obj, "keys")
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	waitHelmFailed(t, obj, sourcev1.InvalidArtifactSignatureReason)

	requestHelmReconcile(t, obj, "again")
	ready := conditionOf(obj, meta.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(sourcev1.InvalidArtifactSignatureReason))
	g.Expect(obj.Status.Artifact).To(Equal(good))

	patch = client.MergeFrom(obj.DeepCopy())
	obj.Spec.Verify = nil
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	waitHelmReady(t, obj, "v1@"+digest)
	g.Expect(conditionOf(obj, sourcev1.SourceVerifiedCondition)).To(BeNil())
}

// A missing or unusable key Secret is VerificationError with a message
// naming it, retried: the Secret, once created, is read without a change
// to the object.
func TestOCIVerificationSecretProblemsAreClearAndRetried(t *testing.T) {
	trusted := cosigntest.NewKey(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/app"
	digest := pushDir(t, url+":v1", map[string]string{"cm.yaml": configMap("one")}, nil)
	trusted.Sign(t, url, digest)
	ns := namespace(t)
	credentials(t, ns, "no-pub", map[string]string{"cosign.key": "private keys do not belong here"})
	credentials(t, ns, "garbage", map[string]string{"release.pub": string(trusted.PublicPEM), "team.pub": "ssh-ed25519 AAAA"})

	tests := []struct{ name, secret, message string }{
		{"missing", "absent", "spec.verify.secretRef: Secret " + ns + "/absent not found"},
		{"no-pub", "no-pub", "spec.verify.secretRef: Secret " + ns + "/no-pub holds no cosign public key (a data key ending in .pub)"},
		{"garbage", "garbage", "spec.verify.secretRef: Secret " + ns + `/garbage: the value of "team.pub" is not a PEM public key`},
	}
	t.Run("refused", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				g := NewWithT(t)
				obj := verifyingOCI(newOCIRepository(ns, tt.name, url, &sourcev1.OCIRepositoryRef{Tag: "v1"}), tt.secret)
				g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
				waitHelmFailed(t, obj, sourcev1.VerificationErrorReason)
				g.Expect(conditionOf(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
				verified := conditionOf(obj, sourcev1.SourceVerifiedCondition)
				g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(verified.Reason).To(Equal(sourcev1.VerificationErrorReason))
				g.Expect(verified.Message).To(HavePrefix(tt.message))
				g.Expect(conditionOf(obj, meta.ReconcilingCondition).Reason).To(Equal(meta.ProgressingWithRetryReason))
				g.Expect(obj.Status.Artifact).To(BeNil())
			})
		}
	})

	g := NewWithT(t)
	credentials(t, ns, "absent", map[string]string{"cosign.pub": string(trusted.PublicPEM)})
	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing"}}
	waitHelmReady(t, obj, "v1@"+digest)
	g.Expect(conditionOf(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionTrue))
}

// What is not implemented is refused at admission rather than ignored:
// keyless cosign (matchOIDCIdentity), another provider, and a verify
// without a Secret.
func TestOCIVerifyIsCheckedAtAdmission(t *testing.T) {
	ns := namespace(t)
	verifyWith := func(name string, verify map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": sourcev1.GroupVersion.String(), "kind": sourcev1.OCIRepositoryKind,
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec": map[string]any{
				"url": "oci://ghcr.io/org/repo", "interval": "5m", "suspend": true,
				"verify": verify,
			},
		}
	}
	tests := []struct {
		name    string
		verify  map[string]any
		refused string // "" when accepted
	}{
		{"defaulted", map[string]any{"secretRef": map[string]any{"name": "keys"}}, ""},
		{"cosign", map[string]any{"provider": "cosign", "secretRef": map[string]any{"name": "keys"}}, ""},
		{"notation", map[string]any{"provider": "notation", "secretRef": map[string]any{"name": "keys"}}, ""},
		{"another-provider", map[string]any{"provider": "gpg", "secretRef": map[string]any{"name": "keys"}},
			`spec.verify.provider: Unsupported value: "gpg"`},
		{"keyless", map[string]any{"provider": "cosign", "secretRef": map[string]any{"name": "keys"},
			"matchOIDCIdentity": []any{map[string]any{"issuer": "^https://token.actions.githubusercontent.com$", "subject": ".*"}}},
			`unknown field "spec.verify.matchOIDCIdentity"`},
		{"no-secret", map[string]any{"provider": "cosign"}, "spec.verify.secretRef: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createStrict(verifyWith(tt.name, tt.verify))
			if tt.refused != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.refused))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			obj := &sourcev1.OCIRepository{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: tt.name}, obj)).To(Succeed())
			g.Expect(obj.Spec.Verify.Provider).To(BeElementOf(sourcev1.OCIVerifyCosign, sourcev1.OCIVerifyNotation))
			if tt.verify["provider"] == nil {
				g.Expect(obj.Spec.Verify.Provider).To(Equal(sourcev1.OCIVerifyCosign), "the default")
			}
		})
	}
}

// Notation: a signature by a certificate of the Secret's CA, for an
// identity its trust policy trusts, makes the artifact; an unsigned
// artifact, another CA's signature and a Secret without a trust policy
// are refused, and nothing of them is pulled.
func TestNotationSignaturesDecideWhetherAnOCIRevisionBecomesAnArtifact(t *testing.T) {
	ca, otherCA := notationtest.NewCA(t, "release-ca"), notationtest.NewCA(t, "stranger-ca")
	reg := newRegistry(t, testhelm.RegistryOptions{})
	url := "oci://" + reg.Host() + "/notation/app"
	repo := strings.TrimPrefix(url, "oci://")
	signed := pushDir(t, url+":signed", map[string]string{"cm.yaml": configMap("signed")}, nil)
	ca.NewSigner(t, "release").Sign(t, url, signed)
	unsigned := pushDir(t, url+":unsigned", map[string]string{"cm.yaml": configMap("unsigned")}, nil)
	foreign := pushDir(t, url+":foreign", map[string]string{"cm.yaml": configMap("foreign")}, nil)
	otherCA.NewSigner(t, "release").Sign(t, url, foreign)
	ns := namespace(t)
	credentials(t, ns, "notation", map[string]string{
		"trustpolicy.json": string(notationtest.TrustPolicy(t, "strict", []string{repo}, notationtest.Subject("release"))),
		"ca.crt":           string(ca.PEM),
	})
	credentials(t, ns, "no-policy", map[string]string{"ca.crt": string(ca.PEM)})

	tests := []ociVerifyCase{
		{name: "signed", tag: "signed", secret: "notation", revision: "signed@" + signed,
			message: "verified notation signature of revision signed@" + signed + " with certificate CN=release,O=Plumb,L=Seattle,ST=WA,C=US"},
		{name: "unsigned", tag: "unsigned", secret: "notation", reason: sourcev1.InvalidArtifactSignatureReason,
			message: "revision unsigned@" + unsigned + " refused, no artifact made of it: the artifact " + unsigned + " is not signed: " + repo + " has no notation signature of it"},
		{name: "signed-under-another-ca", tag: "foreign", secret: "notation", reason: sourcev1.InvalidArtifactSignatureReason,
			message: "revision foreign@" + foreign + " refused, no artifact made of it: the artifact " + foreign +
				" has no notation signature that trustpolicy.json of spec.verify.secretRef: Secret " + ns + "/notation accepts"},
		{name: "no-trust-policy", tag: "signed", secret: "no-policy", reason: sourcev1.VerificationErrorReason,
			message: "spec.verify.secretRef: Secret " + ns + "/no-policy has no trustpolicy.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkOCIVerifyCase(t, ns, url, sourcev1.OCIVerifyNotation, tt)
		})
	}
}
