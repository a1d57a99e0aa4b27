package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/localenv"
)

// Layouts of the fleet's Git repositories.
const (
	// layoutPaths gives each Kustomization a folder of its own in one of
	// the shared repositories: a monorepo of apps or tenants, the shape of
	// most fleets, and every render distinct.
	layoutPaths = "paths"
	// layoutSubstitute has every Kustomization render one shared folder,
	// its namespace filled in by postBuild.substitute: the shape of
	// Flux's benchmark, and the case a shared render would serve.
	layoutSubstitute = "substitute"
)

// appName names the i-th Kustomization, its namespace and its folder.
func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// The drifted value: data.key of each app's ConfigMap, as Git declares it.
const driftKey = "key"

func desiredValue(ns string) string { return "value-of-" + ns }

// appObjects are the four objects of one app, in namespace ns (or the
// ${app} variable in the substituted layout), their names prefixed; the
// Service is headless because envtest's service CIDR holds only 254
// addresses and the fleet has thousands of Services.
func appObjects(ns, prefix string) []*unstructured.Unstructured {
	obj := func(apiVersion, kind, name string, rest map[string]any) *unstructured.Unstructured {
		m := map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": prefix + name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/name": prefix + "web"}}}
		for k, v := range rest {
			m[k] = v
		}
		return &unstructured.Unstructured{Object: m}
	}
	return []*unstructured.Unstructured{
		obj("v1", "ConfigMap", "config", map[string]any{"data": map[string]any{driftKey: desiredValue(ns), "mode": "production"}}),
		obj("v1", "Secret", "credentials", map[string]any{"type": "Opaque", "stringData": map[string]any{"token": "not-a-secret-" + ns}}),
		obj("v1", "Service", "web", map[string]any{"spec": map[string]any{"clusterIP": "None",
			"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}}),
		obj("v1", "ServiceAccount", "runner", nil),
	}
}

// manifests renders objects as one multi-document YAML file.
func manifests(objs []*unstructured.Unstructured) (string, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String(), nil
}

const kustomizationYAML = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n"

// repoName is the i-th shared repository.
func repoName(r int) string { return fmt.Sprintf("fleet-%d", r) }

// pathOf is the folder the i-th Kustomization renders; in the
// substituted layout, the apps with a hook share a folder of their own.
func pathOf(layout string, i, hookEvery int) string {
	if layout == layoutSubstitute && hasHook(i, hookEvery) {
		return "./apps/shared-hook"
	}
	if layout == layoutSubstitute {
		return "./apps/shared"
	}
	return "./apps/" + appName(i)
}

// The PostSync hook of the Kustomizations that have one (-ha): a Job
// whose Pod runs for hookSeconds (localenv's pod simulator stands in for
// a kubelet), so a sync spends that long in its PostSync phase: long
// enough to be killed in.
const (
	hookName    = "post-sync"
	hookKind    = "Job"
	hookSeconds = "2"
)

// hasHook says whether the i-th Kustomization has the PostSync hook: one
// in every hookEvery (0: none).
func hasHook(i, hookEvery int) bool { return hookEvery > 0 && i%hookEvery == 0 }

// hookObject is the PostSync hook of the app in namespace ns.
func hookObject(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": hookKind,
		"metadata": map[string]any{"name": hookName, "namespace": ns, "annotations": map[string]any{kustomizev1.HookAnnotation: "PostSync"}},
		"spec": map[string]any{"backoffLimit": int64(0), "template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{localenv.RunSecondsAnnotation: hookSeconds}},
			"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{
				"name": "check", "image": "busybox:1.36", "command": []any{"sh", "-c", "sleep " + hookSeconds}}}}}}}}
}

// seedRepos creates the shared repositories and pushes one commit to each:
// the folders of the Kustomizations that use it, or the shared folder.
// One app in every hookEvery also has a PostSync hook (0: none).
func seedRepos(ctx context.Context, env *localenv.Env, layout string, n, repos, hookEvery int) error {
	work, err := os.MkdirTemp(env.StateDir, "fleet-seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for r := range repos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := seedRepo(ctx, env, work, layout, r, n, repos, hookEvery)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("repository %s: %w", repoName(r), err)
			}
		}()
	}
	wg.Wait()
	return first
}

func seedRepo(ctx context.Context, env *localenv.Env, work, layout string, r, n, repos, hookEvery int) error {
	name := repoName(r)
	if err := env.Git.CreateRepo(ctx, name); err != nil {
		return err
	}
	clone, err := localenv.InitClone(ctx, env.Git.URL(name), filepath.Join(work, name))
	if err != nil {
		return err
	}
	files := map[string]string{"README.md": "The fleet benchmark's apps (e2e/bench/fleet).\n"}
	if layout == layoutSubstitute {
		m, err := manifests(appObjects("${app}", ""))
		if err != nil {
			return err
		}
		files["apps/shared/app.yaml"], files["apps/shared/kustomization.yaml"] = m, kustomizationYAML
		if hookEvery > 0 {
			m, err := manifests(append(appObjects("${app}", ""), hookObject("${app}")))
			if err != nil {
				return err
			}
			files["apps/shared-hook/app.yaml"], files["apps/shared-hook/kustomization.yaml"] = m, kustomizationYAML
		}
	} else {
		for i := r; i < n; i += repos {
			objs := appObjects(appName(i), "")
			if hasHook(i, hookEvery) {
				objs = append(objs, hookObject(appName(i)))
			}
			m, err := manifests(objs)
			if err != nil {
				return err
			}
			dir := strings.TrimPrefix(pathOf(layout, i, hookEvery), "./")
			files[dir+"/app.yaml"], files[dir+"/kustomization.yaml"] = m, kustomizationYAML
		}
	}
	if err := clone.Write(files); err != nil {
		return err
	}
	_, err = clone.CommitAndPush(ctx, "Add the apps")
	return err
}
