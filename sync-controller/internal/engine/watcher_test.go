package engine

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// TestARemoteWatcherWakesOnlyOwnersOfItsNamespace: a remote cluster's
// objects may carry any owner labels; only Kustomizations of the
// kubeconfig Secret's namespace can target that cluster, so only they
// are woken and get a drift clock.
func TestARemoteWatcherWakesOnlyOwnersOfItsNamespace(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	local, err := NewWatcher(cfg, runtime.NewScheme(), mapper, time.Second, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := local.ForCluster(cfg, runtime.NewScheme(), mapper, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-b", "team-a", "kube-system"} {
		remote.enqueue(map[string]string{kustomizev1.NameLabel: "app", kustomizev1.NamespaceLabel: ns}, "changed", &metav1.PartialObjectMetadata{})
	}
	local.mu.Lock()
	defer local.mu.Unlock()
	if len(local.drift) != 1 {
		t.Fatalf("drift clocks %v, want team-a/app only", local.drift)
	}
	if _, ok := local.drift[types.NamespacedName{Namespace: "team-a", Name: "app"}]; !ok {
		t.Fatalf("drift clocks %v, want team-a/app", local.drift)
	}
}
