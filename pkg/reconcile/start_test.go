package reconcile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/reconcile"
)

const testFinalizer = "test.plumb.dev/finalizer"

// Start, on a live object, adds the finalizer (as stored: read back from
// the API server) and lets the steps run; on a suspended one it adds the
// finalizer too and ends the reconcile; on a deleted one it only
// finalizes.
func TestStartFinalizerSuspensionAndDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	ns, err := env.Namespace(ctx, "start")
	g.Expect(err).NotTo(HaveOccurred())
	var finalized []string
	sk := &reconcile.Controller[*sourcev1.GitRepository]{
		Finalizer: reconcile.Finalizer[*sourcev1.GitRepository]{
			Client: c, FieldManager: "test", Name: testFinalizer,
			Finalize: func(ctx context.Context, obj *sourcev1.GitRepository) error {
				finalized = append(finalized, obj.Name)
				return reconcile.SetFinalizer(ctx, c, obj, "test", testFinalizer, false)
			},
		},
	}
	create := func(name string, suspend bool) *sourcev1.GitRepository { return createRepo(g, ns, name, suspend) }
	stored := func(obj *sourcev1.GitRepository) *sourcev1.GitRepository { return storedRepo(g, obj) }

	live := create("live", false)
	ok, err := sk.Start(ctx, live)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue(), "a live object's steps run")
	g.Expect(controllerutil.ContainsFinalizer(stored(live), testFinalizer)).To(BeTrue())

	suspended := create("suspended", true)
	ok, err = sk.Start(ctx, suspended)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse(), "a suspended object's steps do not run")
	g.Expect(controllerutil.ContainsFinalizer(stored(suspended), testFinalizer)).To(BeTrue())
	g.Expect(finalized).To(BeEmpty())

	g.Expect(c.Delete(ctx, live)).To(Succeed())
	deleting := stored(live)
	g.Expect(deleting.DeletionTimestamp.IsZero()).To(BeFalse(), "the finalizer holds the object")
	ok, err = sk.Start(ctx, deleting)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse(), "a deleted object's steps do not run")
	g.Expect(finalized).To(Equal([]string{"live"}))
	waitRepoGone(g, live)
}

// createRepo creates a GitRepository for Start to take.
func createRepo(g Gomega, ns, name string, suspend bool) *sourcev1.GitRepository {
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL: "https://example.invalid/repo.git", Interval: metav1.Duration{Duration: time.Hour}, Suspend: suspend,
		},
	}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

// storedRepo reads obj back from the API server.
func storedRepo(g Gomega, obj *sourcev1.GitRepository) *sourcev1.GitRepository {
	var got sourcev1.GitRepository
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)).To(Succeed())
	return &got
}

// waitRepoGone waits until obj is not found; another error fails at once.
func waitRepoGone(g Gomega, obj *sourcev1.GitRepository) {
	g.Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), &sourcev1.GitRepository{})
		g.Expect(client.IgnoreNotFound(err)).NotTo(HaveOccurred())
		return err != nil
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "the finalized object is gone")
}

// ArtifactSize and ArtifactRevision read an artifact that may be missing.
func TestArtifactSizeAndRevision(t *testing.T) {
	g := NewWithT(t)
	g.Expect(reconcile.ArtifactSize(nil)).To(BeNil())
	g.Expect(reconcile.ArtifactRevision(nil)).To(BeEmpty())
	size := int64(42)
	a := &meta.Artifact{Revision: "v1", Size: &size}
	g.Expect(reconcile.ArtifactSize(a)).To(Equal(&size))
	g.Expect(reconcile.ArtifactRevision(a)).To(HaveLen(1))
}

// A Retired finalizer is no longer added to a live object; a deleted
// object that an older version gave it is still finalized, and Release
// lets it go.
func TestStartWithARetiredFinalizerAddsNoneAndReleasesOldOnes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	ns, err := env.Namespace(ctx, "retired")
	g.Expect(err).NotTo(HaveOccurred())
	var finalized []string
	f := reconcile.Finalizer[*sourcev1.GitRepository]{Client: c, FieldManager: "test", Name: testFinalizer, Retired: true}
	f.Finalize = func(ctx context.Context, obj *sourcev1.GitRepository) error {
		finalized = append(finalized, obj.Name)
		return f.Release(ctx, obj)
	}
	sk := &reconcile.Controller[*sourcev1.GitRepository]{Finalizer: f}
	create := func(name string) *sourcev1.GitRepository { return createRepo(g, ns, name, false) }
	stored := func(obj *sourcev1.GitRepository) *sourcev1.GitRepository { return storedRepo(g, obj) }

	fresh := create("fresh")
	ok, err := sk.Start(ctx, fresh)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(stored(fresh).Finalizers).To(BeEmpty())

	old := create("old")
	g.Expect(reconcile.SetFinalizer(ctx, c, old, "test", testFinalizer, true)).To(Succeed())
	ok, err = sk.Start(ctx, old)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(controllerutil.ContainsFinalizer(stored(old), testFinalizer)).To(BeTrue(), "a live object keeps what it has")

	g.Expect(c.Delete(ctx, old)).To(Succeed())
	ok, err = sk.Start(ctx, stored(old))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	g.Expect(finalized).To(Equal([]string{"old"}))
	waitRepoGone(g, old)
}

// Removing the finalizer takes it out even when another field manager put
// it there (the install's admission policy's entry is owned by no manager
// at all: the e2e test covers that one), and leaves the other finalizers
// as they are; the object, once deleted, goes.
func TestSetFinalizerRemovesAnEntryAnotherManagerOwns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	ns, err := env.Namespace(ctx, "foreign-finalizer")
	g.Expect(err).NotTo(HaveOccurred())
	const other = "other.example.com/keep"
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo", Finalizers: []string{other, testFinalizer}},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://example.invalid/repo.git", Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(c.Create(ctx, obj, client.FieldOwner("creator"))).To(Succeed())

	g.Expect(reconcile.SetFinalizer(ctx, c, obj, "test", testFinalizer, false)).To(Succeed())
	g.Expect(obj.Finalizers).To(Equal([]string{other}), "the object handed back is as stored")
	g.Expect(storedRepo(g, obj).Finalizers).To(Equal([]string{other}))

	g.Expect(reconcile.SetFinalizer(ctx, c, obj, "test", testFinalizer, false)).To(Succeed(), "removing what is not there is a no-op")

	g.Expect(c.Delete(ctx, obj)).To(Succeed())
	deleting := storedRepo(g, obj)
	g.Expect(reconcile.SetFinalizer(ctx, c, deleting, "test", other, false)).To(Succeed())
	waitRepoGone(g, obj)
}
