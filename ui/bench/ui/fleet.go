package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// fleet is what the bench creates: kustomizations Kustomizations spread
// evenly over namespaces namespaces, each namespace with reposPerNamespace
// GitRepositories they take their source from.
type fleet struct {
	namespaces     int
	kustomizations int
}

const (
	reposPerNamespace = 3
	inventorySize     = 20
	// writers is how many creates and status writes are in flight at
	// once: enough to fill the API server, few enough for two cores.
	writers = 8
)

// objects is how many rows the overview has for the fleet.
func (f fleet) objects() int { return f.kustomizations + f.namespaces*reposPerNamespace }

// create writes the fleet: namespaces, GitRepositories and Kustomizations,
// each followed by its status through the status subresource.
func (f fleet) create(ctx context.Context, c client.Client) error {
	now := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	var jobs []func() error
	for n := 0; n < f.namespaces; n++ {
		ns := fmt.Sprintf("team-%02d", n)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
		for r := 0; r < reposPerNamespace; r++ {
			jobs = append(jobs, func() error { return createRepository(ctx, c, ns, r, now) })
		}
	}
	for i := 0; i < f.kustomizations; i++ {
		ns := fmt.Sprintf("team-%02d", i%f.namespaces)
		jobs = append(jobs, func() error { return createKustomization(ctx, c, ns, i, now) })
	}
	return runAll(jobs)
}

// runAll runs jobs on writers goroutines and returns the first error.
func runAll(jobs []func() error) error {
	next := make(chan func() error)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for job := range next {
				if err := job(); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for _, job := range jobs {
		next <- job
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func revision(seed string) string {
	sum := sha1.Sum([]byte(seed))
	return "main@sha1:" + hex.EncodeToString(sum[:])
}

func createRepository(ctx context.Context, c client.Client, ns string, r int, now metav1.Time) error {
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%d", r)},
		Spec: sourcev1.GitRepositorySpec{
			URL:      fmt.Sprintf("https://git.example.com/%s/repo-%d.git", ns, r),
			Interval: metav1.Duration{Duration: 5 * time.Minute},
		},
	}
	if err := c.Create(ctx, repo); err != nil {
		return err
	}
	rev := revision(ns + repo.Name)
	repo.Status.ObservedGeneration = repo.Generation
	repo.Status.Artifact = &meta.Artifact{
		Path:           fmt.Sprintf("gitrepository/%s/%s/%s.tar.gz", ns, repo.Name, rev[len(rev)-40:]),
		URL:            fmt.Sprintf("http://source-controller.plumb-system.svc/gitrepository/%s/%s/latest.tar.gz", ns, repo.Name),
		Revision:       rev,
		Digest:         "sha256:" + hex.EncodeToString(make([]byte, 32)),
		Size:           ptr.To[int64](48213),
		LastUpdateTime: now,
	}
	apimeta.SetStatusCondition(&repo.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "Succeeded", Message: "stored artifact for revision '" + rev + "'", ObservedGeneration: repo.Generation, LastTransitionTime: now})
	return c.Status().Update(ctx, repo)
}

// createKustomization makes the i-th Kustomization with a status a
// controller could have written: most Ready with nothing drifted, one in
// eight with corrected drift, one in twenty drifted (driftPolicy Report),
// one in fifty contested, one in fifteen failing.
func createKustomization(ctx context.Context, c client.Client, ns string, i int, now metav1.Time) error {
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%04d", i)},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: fmt.Sprintf("repo-%d", i%reposPerNamespace)},
			Path:      fmt.Sprintf("./apps/app-%04d", i),
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Prune:     true,
		},
	}
	if i%20 == 3 {
		k.Spec.DriftPolicy = kustomizev1.DriftPolicyReport
	}
	if err := c.Create(ctx, k); err != nil {
		return err
	}
	rev := revision(ns + k.Spec.SourceRef.Name)
	st := &k.Status
	st.ObservedGeneration = k.Generation
	st.LastAttemptedRevision = rev
	st.LastAppliedRevision = rev
	st.Inventory = &kustomizev1.Inventory{}
	for o := 0; o < inventorySize; o++ {
		e := kustomizev1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: fmt.Sprintf("%s-config-%d", k.Name, o)}
		switch o % 4 {
		case 0:
			e.Group, e.Kind, e.Name = "apps", "Deployment", fmt.Sprintf("%s-%d", k.Name, o)
		case 1:
			e.Kind, e.Name = "Service", fmt.Sprintf("%s-%d", k.Name, o)
		}
		st.Inventory.Entries = append(st.Inventory.Entries, e)
	}
	st.Sync = &kustomizev1.SyncProgress{Revision: rev, Generation: k.Generation, Phase: kustomizev1.PhaseSucceeded,
		StartedAt: &now, FinishedAt: &now, Message: fmt.Sprintf("applied %d objects", inventorySize)}
	ready := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded",
		Message: "Applied revision: " + rev, ObservedGeneration: k.Generation, LastTransitionTime: now}
	condition := func(typ string, status metav1.ConditionStatus, reason, message string) {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: k.Generation, LastTransitionTime: now})
	}
	deployment := fmt.Sprintf("apps/Deployment/%s/%s-0", ns, k.Name)
	switch {
	case i%15 == 7:
		ready.Status, ready.Reason = metav1.ConditionFalse, "HealthCheckFailed"
		ready.Message = "Deployment/" + ns + "/" + k.Name + "-0 status: 'InProgress': 1 of 3 replicas available"
		st.Sync.Phase = kustomizev1.PhaseFailed
	case i%50 == 11:
		st.Drift = &kustomizev1.DriftStatus{Count: 14, LastDetected: &now, Paths: []string{deployment + ":spec.replicas"},
			Contested: []kustomizev1.ContestedDrift{{Object: deployment, Fields: []string{"spec.replicas"}, Manager: "hpa-controller",
				Reverts: 14, Since: &now}}}
		condition(kustomizev1.DriftContestedCondition, metav1.ConditionTrue, kustomizev1.DriftContestedReason,
			deployment+" spec.replicas is also written by hpa-controller")
	case k.Spec.DriftPolicy == kustomizev1.DriftPolicyReport:
		st.Drift = &kustomizev1.DriftStatus{Count: 2, LastDetected: &now,
			Paths: []string{deployment + ":spec.template.spec.containers[0].image", fmt.Sprintf("v1/ConfigMap/%s/%s-config-2:data.LOG_LEVEL", ns, k.Name)}}
		condition(kustomizev1.DriftedCondition, metav1.ConditionTrue, kustomizev1.DriftDetectedReason, "2 fields differ from Git")
	case i%8 == 5:
		st.Drift = &kustomizev1.DriftStatus{Count: 1, LastDetected: &now, Paths: []string{deployment + ":spec.replicas"}}
		condition(kustomizev1.DriftedCondition, metav1.ConditionFalse, kustomizev1.DriftCorrectedReason, "1 field reverted to Git")
	default:
		st.Drift = &kustomizev1.DriftStatus{}
	}
	apimeta.SetStatusCondition(&st.Conditions, ready)
	return c.Status().Update(ctx, k)
}
