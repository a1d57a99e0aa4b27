package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/testhelm"
)

// helmControllerName names Flux's controller process in the figures.
const helmControllerName = "helm-controller"

// plumbSource gives Plumb's side its chart as Plumb users get one: a
// HelmRepository (an HTTP chart repository on 127.0.0.1, pkg/testhelm)
// and one HelmChart that every HelmRelease's chartRef names, made Ready by
// source-controller before the clock starts.
func (b *bench) plumbSource(ctx context.Context) (func(), error) {
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		return nil, err
	}
	if err := repo.Add(benchChart); err != nil {
		repo.Close()
		return nil, err
	}
	hr := obj("source.plumb.dev/v1", "HelmRepository", plumbSide.ns, "bench", map[string]any{"url": repo.URL(), "interval": "1h"})
	hc := obj("source.plumb.dev/v1", "HelmChart", plumbSide.ns, chartName, map[string]any{
		"chart": chartName, "version": chartVersion, "interval": "1h",
		"sourceRef": map[string]any{"kind": "HelmRepository", "name": "bench"},
	})
	for _, o := range []*unstructured.Unstructured{hr, hc} {
		if err := b.fast.Create(ctx, o); err != nil {
			repo.Close()
			return nil, fmt.Errorf("%s: %w", o.GetKind(), err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(hc.GroupVersionKind())
		if err := b.fast.Get(ctx, client.ObjectKeyFromObject(hc), got); err != nil {
			repo.Close()
			return nil, err
		}
		if url, _, _ := unstructured.NestedString(got.Object, "status", "artifact", "url"); url != "" {
			return repo.Close, nil
		}
		if time.Now().After(deadline) {
			repo.Close()
			return nil, fmt.Errorf("the HelmChart has no artifact after 3m: %s", readyMessage(got))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fluxSource gives Flux's side its chart without Flux's source-controller:
// an ExternalArtifact (source.toolkit.fluxcd.io/v1, the CRD of the
// source-controller version helm-controller's module requires) whose
// status.artifact the bench writes, pointing at the packaged chart served
// over HTTP on 127.0.0.1. helm-controller downloads the .tgz from
// artifact.url and checks it against artifact.digest (sha256) before it
// loads it; the revision is the chart version, so it keeps the chart's
// version as it is (a revision with a digest would be appended to it).
func (b *bench) fluxSource(ctx context.Context) (func(), error) {
	tgz, err := testhelm.Package(benchChart)
	if err != nil {
		return nil, err
	}
	file := fmt.Sprintf("%s-%s.tgz", chartName, chartVersion)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+file, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(tgz)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	stop := func() { _ = srv.Close() }

	sum := sha256.Sum256(tgz)
	ea := obj("source.toolkit.fluxcd.io/v1", "ExternalArtifact", fluxSide.ns, chartName, map[string]any{})
	if err := b.fast.Create(ctx, ea); err != nil {
		stop()
		return nil, fmt.Errorf("ExternalArtifact: %w", err)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	ea.Object["status"] = map[string]any{
		"artifact": map[string]any{
			"path":           "externalartifact/" + fluxSide.ns + "/" + chartName + "/" + file,
			"url":            "http://" + l.Addr().String() + "/" + file,
			"revision":       chartVersion,
			"digest":         "sha256:" + hex.EncodeToString(sum[:]),
			"size":           int64(len(tgz)),
			"lastUpdateTime": now,
		},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded",
			"message": "served by the bench", "lastTransitionTime": now, "observedGeneration": ea.GetGeneration()}},
	}
	if err := b.fast.Status().Update(ctx, ea); err != nil {
		stop()
		return nil, fmt.Errorf("ExternalArtifact status: %w", err)
	}
	return stop, nil
}

// installFluxCRDs installs Flux's CRDs that hack/helm-controller.sh put in
// bin/helm-controller-crds and waits until they are served.
func (b *bench) installFluxCRDs() error {
	dir := filepath.Join(b.env.Root, "bin", "helm-controller-crds")
	_, err := envtest.InstallCRDs(b.env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("installing the CRDs of Flux in %s (make bench-helmrelease runs hack/helm-controller.sh): %w", dir, err)
	}
	return nil
}

// startHelmController starts bin/helm-controller as a process against the
// environment's API server, with Flux's defaults but for what a single
// process on 127.0.0.1 needs: no leader election, ports of its own, and
// the ExternalArtifact feature gate (off by default in this version) on.
func (b *bench) startHelmController(ctx context.Context) (*localenv.Process, string, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	health, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	p := &localenv.Process{
		Name: helmControllerName,
		Path: filepath.Join(b.env.Root, "bin", "helm-controller"),
		Args: []string{
			"--metrics-addr=" + metrics, "--health-addr=" + health,
			"--enable-leader-election=false", "--watch-all-namespaces=true",
			"--feature-gates=ExternalArtifact=true",
			"--log-level=" + b.c.logLevel, "--log-encoding=json",
		},
		Env:     []string{"KUBECONFIG=" + b.env.Kubeconfig, "RUNTIME_NAMESPACE=" + fluxSide.ns},
		LogPath: filepath.Join(b.env.StateDir, "logs", helmControllerName+".log"),
	}
	if err := p.Start(); err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, "http://" + metrics + "/metrics", nil
			}
		}
		if !p.Running() || time.Now().After(deadline) {
			_ = p.Stop(5 * time.Second)
			return nil, "", fmt.Errorf("helm-controller not ready (running: %t); its log:\n%s", p.Running(), localenv.Tail(p.LogPath, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeAddr picks a free port on 127.0.0.1 for a server that binds it
// itself (the port is closed here and bound again there).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// obj is an object of the given kind with the given spec.
func obj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
