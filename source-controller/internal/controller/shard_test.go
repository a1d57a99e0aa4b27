package controller

import (
	"context"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/testgit"
)

// startShard runs a GitRepository reconciler for one shard, with storage
// and an artifact server of its own, as a shard's source-controller
// Deployment does; it returns the address its artifact URLs advertise.
func startShard(t *testing.T, shard string) string {
	t.Helper()
	storage, err := artifact.NewStorage(t.TempDir(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := artifact.NewServer("127.0.0.1:0", storage)
	addr, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	storage.Hostname = addr.String()
	mgr, err := app.NewManager(ControllerName, env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: "0", Concurrent: 2, WatchLabelSelector: meta.ShardKeyLabel + " in (" + shard + ")",
	}, &sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(srv); err != nil {
		t.Fatal(err)
	}
	r := &GitRepositoryReconciler{
		Client:            mgr.GetClient(),
		Storage:           storage,
		Events:            events.NewRecorder(mgr.GetEventRecorder(ControllerName), nil, env.Scheme, ControllerName),
		Metrics:           NewMetrics(prometheus.NewRegistry()),
		MaxRepositorySize: maxRepositorySize,
		Addresses:         testAddresses,
	}
	// The suite's main instance runs a controller of the same name in this
	// process; in a cluster each shard is a process of its own.
	skip := true
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &skip}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	return addr.String()
}

// Each shard's source-controller writes the artifacts of its own
// GitRepositories, advertises its own server in their URLs, and serves
// them there: a consumer (render-controller) downloads each from the
// instance that produced it. The main instance leaves them alone.
func TestEachShardServesTheArtifactsItProduced(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	commit, err := repo.Commit("main", "one", testgit.Files{"app/cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	secret := basicAuth(t, ns)
	servers := map[string]string{"shard1": startShard(t, "shard1"), "shard2": startShard(t, "shard2")}

	for shard, addr := range servers {
		obj := newGitRepository(ns, "in-"+shard, repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
		obj.Labels = map[string]string{meta.ShardKeyLabel: shard}
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		obj = waitReady(t, keyOf(obj), "main@sha1:"+commit)

		a := obj.Status.Artifact
		u, err := url.Parse(a.URL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(u.Host).To(Equal(addr), "the artifact URL names the server of %s, the shard that wrote it", shard)
		g.Expect(u.Host).NotTo(Equal(storage.Hostname), "the main instance wrote the artifact of a shard's source")
		// As render-controller downloads a source: the URL in status,
		// checked against the digest in status.
		data, err := fetch.Bytes(context.Background(), a.URL, a.Digest, fetch.Options{MaxSize: 1 << 20})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(files(t, data)).To(HaveKeyWithValue("app/cm.yaml", "v: 1"))
	}
}
