package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

// floorFieldManager applies the floor's Deployment.
const floorFieldManager = "plumb-bench-floor"

// suspendAll suspends the sample's GitRepository, Kustomization and image
// objects, so Plumb's controllers stay idle while the floor runs (a push
// webhook still reaches notification-controller, which annotates a
// suspended GitRepository that source-controller then leaves alone).
func (b *bench) suspendAll(ctx context.Context) error {
	ns := b.demo.Namespace
	objs := []client.Object{
		&imagev1.ImageRepository{}, &imagev1.ImagePolicy{}, &imagev1.ImageUpdateAutomation{},
		&sourcev1.GitRepository{}, &kustomizev1.Kustomization{},
	}
	names := []string{localenv.DemoImageName, localenv.DemoImageName, localenv.DemoAutomationName, "demo", "demo"}
	for i, obj := range objs {
		obj.SetNamespace(ns)
		obj.SetName(names[i])
		if err := b.env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
			return fmt.Errorf("suspending %T %s: %w", obj, names[i], err)
		}
	}
	return nil
}

// imageLine is the web container's image line of the sample's
// deployment.yaml, its tag in the second group.
var imageLine = regexp.MustCompile(`(?m)^(\s+image: [^\s#]*/examples/web:)([^\s#]+)`)

// floorRound does the chain's work directly and returns how long it took
// from before the tag was written to the Deployment's apply.
func (b *bench) floorRound(ctx context.Context) (time.Duration, string, error) {
	start := time.Now()
	tag, err := b.tagImage(ctx)
	if err != nil {
		return 0, tag, err
	}
	// Resolve: the registry's tags, the highest semver.
	repo, err := name.NewRepository(b.demo.WebImage, name.Insecure)
	if err != nil {
		return 0, tag, err
	}
	tags, err := remote.List(repo, remote.WithContext(ctx))
	if err != nil {
		return 0, tag, err
	}
	var versions []*semver.Version
	for _, t := range tags {
		if v, err := semver.StrictNewVersion(t); err == nil {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return 0, tag, fmt.Errorf("no semver tag in %v", tags)
	}
	sort.Sort(semver.Collection(versions))
	latest := versions[len(versions)-1].Original()
	if latest != tag {
		return 0, tag, fmt.Errorf("the highest tag is %s, not the new %s", latest, tag)
	}
	// Commit: the tag in deployment.yaml, pushed with the git binary.
	if err := b.clone.Pull(ctx); err != nil {
		return 0, tag, err
	}
	content, err := b.clone.Read("deployment.yaml")
	if err != nil {
		return 0, tag, err
	}
	if !imageLine.MatchString(content) {
		return 0, tag, fmt.Errorf("deployment.yaml has no image line of the web image")
	}
	content = imageLine.ReplaceAllString(content, "${1}"+latest)
	if err := b.clone.Write(map[string]string{"deployment.yaml": content}); err != nil {
		return 0, tag, err
	}
	if _, err := b.clone.CommitAndPush(ctx, "Update the web image to "+latest); err != nil {
		return 0, tag, err
	}
	// Apply: the Deployment of the file, named as the sample's
	// kustomization renames it, server-side.
	objs, err := localenv.DecodeYAML([]byte(content))
	if err != nil || len(objs) != 1 {
		return 0, tag, fmt.Errorf("deployment.yaml: %d objects, %v", len(objs), err)
	}
	dep := objs[0]
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return 0, tag, fmt.Errorf("deployment.yaml has no containers")
	}
	containers[0].(map[string]any)["image"] = b.demo.WebImage + ":" + latest
	if err := unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return 0, tag, err
	}
	if err := b.env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dep), client.FieldOwner(floorFieldManager), client.ForceOwnership); err != nil {
		return 0, tag, err
	}
	return time.Since(start), tag, nil
}
