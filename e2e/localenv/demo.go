package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/testhelm"
)

// The sample application's files and Plumb objects, under the checkout.
const (
	DemoAppDir      = "deploy/examples/app"
	DemoObjectsFile = "deploy/examples/plumb/demo.yaml"
	// The Helm part of the sample (DemoOptions.Helm): a chart folder the
	// launcher serves from a chart repository of its own, and the
	// HelmRepository and HelmRelease that install it.
	DemoChartDir        = "deploy/examples/helm/hello"
	DemoHelmObjectsFile = "deploy/examples/plumb/helm-demo.yaml"
	demoAppNamespace    = "plumb-demo"
	fieldManager        = "plumb-local"
	// DemoServiceAccount is the ServiceAccount of DemoObjectsFile that the
	// sample's Kustomization and HelmRelease act as.
	DemoServiceAccount = "demo-deployer"
)

// DemoOptions name one copy of the sample: its Git repository, the
// namespace of its Plumb objects and the namespace the app is deployed to.
type DemoOptions struct {
	// Namespace holds the GitRepository, Kustomization, Receiver, Provider
	// and Alert; default plumb-system.
	Namespace string
	// AppNamespace is where the app goes; default plumb-demo.
	AppNamespace string
	// Repo is the Git repository's name; default demo.
	Repo string
	// Helm adds the Helm part of the sample: the chart of DemoChartDir on
	// a local chart repository, installed into AppNamespace + "-helm" by
	// the HelmRelease "hello" of DemoHelmObjectsFile.
	Helm bool
	// ImageRegistry is where the example images are (the Registry given
	// to imagebuild.PushLocal), for a node that pulls them: the app's
	// kustomization gets an images: entry and the HelmRelease the values
	// that name them there (PointDemoImages). Empty: the sample's neutral
	// names stay, which the pod simulator never pulls.
	ImageRegistry string
	// Plugin adds the sample's plugin part: DemoPluginDir pushed as the
	// repository's plugin/ folder, and the Kustomization demo-plugin of
	// DemoPluginObjectsFile, which the example plugin renders (it needs
	// Env.Plugin: its binary built).
	Plugin bool
	// ImageAutomation adds the sample's image automation
	// (DemoImageObjectsFile, demoautomation.go); it needs the launcher's
	// Registry (Options.Registry or a real node).
	ImageAutomation bool
}

// Demo is a deployed copy of the sample.
type Demo struct {
	DemoOptions
	RepoURL string
	// PushURL is RepoURL with the credentials the Git server asks pushes
	// for (the GitRepository's Secret git-credentials), for the git
	// binary.
	PushURL      string
	WebhookToken string
	// WebhookURL is the Receiver's full URL (receiver address + webhook path).
	WebhookURL string
	// ChartRepoURL is the local chart repository's URL and HelmNamespace
	// the release's namespace, with DemoOptions.Helm; else "".
	ChartRepoURL  string
	HelmNamespace string
	// Objects are the Plumb objects applied.
	Objects []*unstructured.Unstructured
	// The image automation's, with DemoOptions.ImageAutomation.
	demoAutomation
}

// DeployDemo makes a copy of the sample: it creates the Git repository and
// pushes deploy/examples/app to it with the git binary (the app namespace
// and the image policy markers' namespace replaced, the images pointed at
// opts.ImageRegistry when set, else at the launcher's Registry when it
// runs), with push credentials that the GitRepository's Secret holds,
// applies deploy/examples/plumb/demo.yaml, and DemoImageObjectsFile with
// opts.ImageAutomation (its Plumb objects
// once the ServiceAccount they act as, DemoServiceAccount, is allowed in
// the app's namespaces), waits for the Receiver
// to publish its webhook path and registers that URL as the repository's
// push webhook.
func (e *Env) DeployDemo(ctx context.Context, opts DemoOptions) (*Demo, error) {
	if opts.Namespace == "" {
		opts.Namespace = "plumb-system"
	}
	if opts.AppNamespace == "" {
		opts.AppNamespace = demoAppNamespace
	}
	if opts.Repo == "" {
		opts.Repo = "demo"
	}
	if opts.ImageRegistry == "" && e.Registry != nil {
		// A real node pulls from the launcher's registry only.
		opts.ImageRegistry = e.Registry.Addr
	}
	d := &Demo{DemoOptions: opts, RepoURL: e.Git.URL(opts.Repo)}
	d.WebhookToken = randomToken()
	gitCreds := PushCredentials{Username: "demo", Password: randomToken()}

	if err := e.Git.CreateRepo(ctx, opts.Repo); err != nil {
		return nil, err
	}
	e.Git.SetPushCredentials(opts.Repo, gitCreds)
	d.PushURL = e.Git.PushURL(opts.Repo)
	files, err := e.DemoAppFiles(opts.AppNamespace)
	if err != nil {
		return nil, err
	}
	if err := PointDemoImages(files, opts.ImageRegistry); err != nil {
		return nil, err
	}
	pointDemoMarkers(files, opts.Namespace, opts.ImageRegistry)
	if opts.Plugin {
		if e.Plugin == nil {
			return nil, fmt.Errorf("the sample's plugin part needs the example plugin: build %s into %s", ExamplePluginPackage, filepath.Join(e.opts.BinDir, ExamplePluginBinary))
		}
		if err := e.addDemoPluginFiles(files); err != nil {
			return nil, err
		}
	}
	work, err := os.MkdirTemp(e.StateDir, "seed-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	clone, err := InitClone(ctx, d.PushURL, filepath.Join(work, opts.Repo))
	if err != nil {
		return nil, err
	}
	if err := clone.Write(files); err != nil {
		return nil, err
	}
	if _, err := clone.CommitAndPush(ctx, "Add the hello app"); err != nil {
		return nil, err
	}

	vars := map[string]string{
		"NAMESPACE":     opts.Namespace,
		"APP_NAMESPACE": opts.AppNamespace,
		"GIT_URL":       d.RepoURL,
		"WEBHOOK_TOKEN": d.WebhookToken,
		"SLACK_URL":     e.Slack.URL(),
		"GIT_USERNAME":  gitCreds.Username,
		"GIT_PASSWORD":  gitCreds.Password,
	}
	manifests := []string{DemoObjectsFile}
	if opts.Helm {
		if d.ChartRepoURL, err = e.serveDemoChart(); err != nil {
			return nil, err
		}
		d.HelmNamespace = opts.AppNamespace + "-helm"
		vars["HELM_REPO_URL"], vars["HELM_NAMESPACE"] = d.ChartRepoURL, d.HelmNamespace
		maps.Copy(vars, demoImageVars(opts.ImageRegistry))
		manifests = append(manifests, DemoHelmObjectsFile)
	}
	if opts.Plugin {
		manifests = append(manifests, DemoPluginObjectsFile)
	}
	if opts.ImageAutomation {
		imageVars, err := e.prepareImageAutomation(d)
		if err != nil {
			return nil, err
		}
		maps.Copy(vars, imageVars)
		manifests = append(manifests, DemoImageObjectsFile)
	}
	for _, f := range manifests {
		tmpl, err := os.ReadFile(filepath.Join(e.Root, f))
		if err != nil {
			return nil, err
		}
		manifest := os.Expand(string(tmpl), func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return "${" + k + "}"
		})
		objs, err := DecodeYAML([]byte(manifest))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		d.Objects = append(d.Objects, objs...)
	}
	// What the platform team gives the app (namespaces, the
	// ServiceAccount, its bindings, the Secrets) first, and the Plumb
	// objects once the API server's authorizer counts the bindings: a
	// sync refused before that would wait for its retry interval.
	var plumbObjs []*unstructured.Unstructured
	for _, obj := range d.Objects {
		if strings.HasSuffix(obj.GroupVersionKind().Group, "plumb.dev") {
			plumbObjs = append(plumbObjs, obj)
			continue
		}
		if err := e.apply(ctx, obj); err != nil {
			return nil, err
		}
	}
	appNamespaces := []string{opts.AppNamespace}
	if opts.Helm {
		appNamespaces = append(appNamespaces, d.HelmNamespace)
	}
	for _, ns := range appNamespaces {
		if err := e.waitAllowed(ctx, types.NamespacedName{Namespace: opts.Namespace, Name: DemoServiceAccount}, "patch", "configmaps", ns); err != nil {
			return nil, err
		}
	}
	for _, obj := range plumbObjs {
		if err := e.apply(ctx, obj); err != nil {
			return nil, err
		}
	}

	path, err := e.waitWebhookPath(ctx, opts.Namespace, "github")
	if err != nil {
		return nil, err
	}
	if d.WebhookURL, err = e.receiverURL(ctx, path); err != nil {
		return nil, err
	}
	e.Git.AddWebhook(opts.Repo, Webhook{URL: d.WebhookURL, Secret: d.WebhookToken})
	if opts.ImageAutomation {
		if path, err = e.waitWebhookPath(ctx, opts.Namespace, DemoRegistryHook); err != nil {
			return nil, err
		}
		d.RegistryWebhookURL = e.ReceiverURL(path)
	}
	return d, nil
}

// serveDemoChart starts a chart repository on 127.0.0.1 (its index built
// by the Helm SDK) serving the chart of DemoChartDir, stopped by Stop, and
// returns its URL.
func (e *Env) serveDemoChart() (string, error) {
	tgz, err := testhelm.PackageDir(filepath.Join(e.Root, DemoChartDir))
	if err != nil {
		return "", fmt.Errorf("packaging %s: %w", DemoChartDir, err)
	}
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	e.chartRepos = append(e.chartRepos, repo)
	e.mu.Unlock()
	if err := repo.AddArchive(tgz); err != nil {
		return "", err
	}
	return repo.URL(), nil
}

// DemoAppFiles returns the sample app's files with its namespace replaced
// by appNamespace.
func (e *Env) DemoAppFiles(appNamespace string) (map[string]string, error) {
	dir := filepath.Join(e.Root, DemoAppDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, ent := range entries {
		if ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		files[ent.Name()] = strings.ReplaceAll(string(b), demoAppNamespace, appNamespace)
	}
	return files, nil
}

// addDemoPluginFiles adds the files of DemoPluginDir to the sample
// repository's, under plugin/.
func (e *Env) addDemoPluginFiles(files map[string]string) error {
	dir := filepath.Join(e.Root, DemoPluginDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return err
		}
		files["plugin/"+ent.Name()] = string(b)
	}
	return nil
}

// waitWebhookPath waits for notification-controller to set the Receiver's
// status.webhookPath, for as long as ctx allows.
func (e *Env) waitWebhookPath(ctx context.Context, namespace, name string) (string, error) {
	began, said := time.Now(), time.Now()
	for {
		rcv := &notificationv1.Receiver{}
		err := e.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, rcv)
		if err == nil && rcv.Status.WebhookPath != "" {
			return rcv.Status.WebhookPath, nil
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			e.progress("still waiting for notification-controller to give the Receiver %s/%s its webhook path (%s)", namespace, name, time.Since(began).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the Receiver %s/%s got no webhook path (is notification-controller running? see %s): %w",
				namespace, name, e.Controllers[NotificationController].LogPath, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ApplyYAML server-side-applies every object of a multi-document YAML
// stream, in order, and returns them as applied.
func (e *Env) ApplyYAML(ctx context.Context, data []byte) ([]*unstructured.Unstructured, error) {
	objs, err := DecodeYAML(data)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if err := e.apply(ctx, obj); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// apply server-side-applies obj as the launcher.
func (e *Env) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// waitAllowed waits until the API server's authorizer lets the
// ServiceAccount sa do verb on resource in namespace, for as long as ctx
// allows: a new RoleBinding takes a moment to count.
func (e *Env) waitAllowed(ctx context.Context, sa types.NamespacedName, verb, resource, namespace string) error {
	began, said := time.Now(), time.Now()
	for {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource},
		}}
		err := e.Client.Create(ctx, sar)
		if err == nil && sar.Status.Allowed {
			return nil
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			e.progress("still waiting for ServiceAccount %s to be allowed to %s %s in namespace %s (%s)", sa, verb, resource, namespace, time.Since(began).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ServiceAccount %s was never allowed to %s %s in namespace %s (last answer: %v, %q): %w",
				sa, verb, resource, namespace, err, sar.Status.Reason, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DecodeYAML splits a multi-document YAML stream into objects, skipping
// empty documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}
