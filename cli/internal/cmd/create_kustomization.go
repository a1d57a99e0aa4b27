package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// healthCheckKinds are the kinds --health-check takes, with their API
// versions: Flux's list, and Plumb's Kustomization.
var healthCheckKinds = map[string]string{
	"Deployment":                  "apps/v1",
	"DaemonSet":                   "apps/v1",
	"StatefulSet":                 "apps/v1",
	helmv2.HelmReleaseKind:        helmv2.GroupVersion.String(),
	kustomizev1.KustomizationKind: kustomizev1.GroupVersion.String(),
}

func newCreateKustomizationCmd(o *createOpts) *cobra.Command {
	var source, path, serviceAccount, decryptionProvider, decryptionSecret, targetNamespace, kubeconfigSecret string
	var prune, wait bool
	var healthChecks, dependsOn []string
	var healthTimeout, retryInterval time.Duration
	c := o.leaf("kustomization", "Create or update a Kustomization",
		"  plumb create kustomization podinfo --source=podinfo --path=./kustomize --prune --wait --health-check-timeout=3m\n"+
			"  plumb create kustomization podinfo --source=OCIRepository/podinfo --path=./ --prune --target-namespace=default",
		func(t target) (built, error) {
			switch {
			case source == "":
				return built{}, errRequired("source")
			case path == "":
				return built{}, errRequired("path")
			case !strings.HasPrefix(path, "./"):
				return built{}, fmt.Errorf("--path %q must begin with ./", path)
			}
			ref, err := parseRef("source", source, sourcev1.GitRepositoryKind,
				[]string{sourcev1.GitRepositoryKind, sourcev1.OCIRepositoryKind, sourcev1.BucketKind, sourcev1.ExternalArtifactKind})
			if err != nil {
				return built{}, err
			}
			ks := &kustomizev1.Kustomization{
				ObjectMeta: objectMeta(t),
				Spec: kustomizev1.KustomizationSpec{
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace},
					Path:      path, Interval: metav1.Duration{Duration: o.interval}, Prune: prune,
					ServiceAccountName: serviceAccount, TargetNamespace: targetNamespace,
				},
			}
			if ks.Spec.DependsOn, err = dependencies(dependsOn); err != nil {
				return built{}, err
			}
			for _, hc := range healthChecks {
				ref, err := parseRef("health-check", hc, "", sortedKeys(healthCheckKinds))
				if err != nil {
					return built{}, err
				}
				if ref.namespace == "" {
					return built{}, fmt.Errorf("--health-check %q: want <kind>/<name>.<namespace>", hc)
				}
				ks.Spec.HealthChecks = append(ks.Spec.HealthChecks, kustomizev1.NamespacedObjectKindReference{
					APIVersion: healthCheckKinds[ref.kind], Kind: ref.kind, Name: ref.name, Namespace: ref.namespace,
				})
			}
			// Flux's rule: the health timeout is spec.timeout whenever
			// something is waited for.
			if len(healthChecks) > 0 || wait {
				ks.Spec.Wait = wait
				ks.Spec.Timeout = &metav1.Duration{Duration: healthTimeout}
			}
			if retryInterval > 0 {
				ks.Spec.RetryInterval = &metav1.Duration{Duration: retryInterval}
			}
			if kubeconfigSecret != "" {
				ks.Spec.KubeConfig = &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: kubeconfigSecret}}
			}
			switch {
			case decryptionProvider != "":
				if err := oneOf("decryption-provider", decryptionProvider, []string{"sops"}); err != nil {
					return built{}, err
				}
				ks.Spec.Decryption = &kustomizev1.Decryption{Provider: decryptionProvider, SecretRef: localRef(decryptionSecret)}
			case decryptionSecret != "":
				return built{}, errors.New("--decryption-secret needs --decryption-provider=sops")
			}
			return built{objs: []client.Object{ks}, wait: kustomizationKind}, nil
		})
	f := c.Flags()
	f.StringVar(&source, "source", "", "Source of the manifests, [<kind>/]<name>[.<namespace>], kind GitRepository (the default), OCIRepository, Bucket or ExternalArtifact.")
	f.StringVar(&path, "path", "", "Path to the directory of the manifests in the source, starting with ./.")
	f.BoolVar(&prune, "prune", false, "Delete the objects the source no longer has.")
	f.BoolVar(&wait, "wait", false, "Wait for every applied object to be healthy.")
	f.StringSliceVar(&healthChecks, "health-check", nil, "Object to wait for, <kind>/<name>.<namespace> (Deployment, DaemonSet, StatefulSet, HelmRelease, Kustomization).")
	f.DurationVar(&healthTimeout, "health-check-timeout", 2*time.Minute, "How long to wait for health (spec.timeout), with --wait or --health-check.")
	f.StringSliceVar(&dependsOn, "depends-on", nil, "Kustomizations to be Ready first, <name> or <namespace>/<name> (several: repeat or separate with commas).")
	f.StringVar(&serviceAccount, "service-account", "", "ServiceAccount to impersonate when applying.")
	f.StringVar(&decryptionProvider, "decryption-provider", "", "Decryption of encrypted manifests: sops.")
	f.StringVar(&decryptionSecret, "decryption-secret", "", "Secret with the age or OpenPGP keys for sops.")
	f.StringVar(&targetNamespace, "target-namespace", "", "Namespace of every namespaced object applied.")
	f.StringVar(&kubeconfigSecret, "kubeconfig-secret-ref", "", "Secret with the kubeconfig of a remote cluster to apply to.")
	f.DurationVar(&retryInterval, "retry-interval", 0, "Interval between retries after a failure; --interval when 0.")
	return c
}

// dependencies reads --depends-on: <name> or <namespace>/<name>.
func dependencies(in []string) ([]meta.DependencyReference, error) {
	var out []meta.DependencyReference
	for _, d := range in {
		ns, name, ok := strings.Cut(d, "/")
		if !ok {
			ns, name = "", d
		}
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--depends-on %q: want <name> or <namespace>/<name>", d)
		}
		out = append(out, meta.DependencyReference{Namespace: ns, Name: name})
	}
	return out, nil
}
