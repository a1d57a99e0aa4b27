package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

func newCreateHelmReleaseCmd(o *createOpts) *cobra.Command {
	var releaseName, source, chart, chartVersion, chartRef, targetNamespace, storageNamespace string
	var serviceAccount, strategy, crds, kubeconfigSecret string
	var createNamespace bool
	var chartInterval time.Duration
	var dependsOn, valuesFiles, valuesFrom []string
	c := o.leaf("helmrelease", "Create or update a HelmRelease",
		"  plumb create helmrelease podinfo --source=HelmRepository/podinfo --chart=podinfo --chart-version='>6.0.0'\n"+
			"  plumb create helmrelease podinfo --source=GitRepository/podinfo --chart=./charts/podinfo --values=./values.yaml\n"+
			"  plumb create helmrelease podinfo --chart-ref=OCIRepository/podinfo --target-namespace=apps --create-target-namespace",
		func(t target) (built, error) {
			switch {
			case chart == "" && chartRef == "":
				return built{}, errors.New("--chart or --chart-ref is required")
			case chart != "" && chartRef != "":
				return built{}, errors.New("give --chart or --chart-ref, not both")
			case chart != "" && source == "":
				return built{}, errRequired("source")
			}
			hr := &helmv2.HelmRelease{
				ObjectMeta: objectMeta(t),
				Spec: helmv2.HelmReleaseSpec{
					Interval: metav1.Duration{Duration: o.interval}, ReleaseName: releaseName,
					TargetNamespace: targetNamespace, StorageNamespace: storageNamespace, ServiceAccountName: serviceAccount,
				},
			}
			var err error
			if hr.Spec.DependsOn, err = dependencies(dependsOn); err != nil {
				return built{}, err
			}
			if chart != "" {
				ref, err := parseRef("source", source, "", []string{sourcev1.HelmRepositoryKind, sourcev1.GitRepositoryKind})
				if err != nil {
					return built{}, err
				}
				if err := oneOf("reconcile-strategy", strategy, []string{"ChartVersion", "Revision"}); err != nil {
					return built{}, err
				}
				hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: chart, Version: chartVersion, ReconcileStrategy: strategy,
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace},
				}}
				if chartInterval > 0 {
					hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: chartInterval}
				}
			} else {
				ref, err := parseRef("chart-ref", chartRef, "", []string{sourcev1.OCIRepositoryKind, sourcev1.HelmChartKind, sourcev1.ExternalArtifactKind})
				if err != nil {
					return built{}, err
				}
				hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace}
			}
			if createNamespace {
				hr.Spec.Install = &helmv2.Install{CreateNamespace: true}
			}
			if crds != "" {
				if err := oneOf("crds", crds, []string{"Skip", "Create", "CreateReplace"}); err != nil {
					return built{}, err
				}
				// Flux's rule: CRDs are created on install, and the
				// policy given is the upgrade's.
				if hr.Spec.Install == nil {
					hr.Spec.Install = &helmv2.Install{}
				}
				hr.Spec.Install.CRDs = "Create"
				hr.Spec.Upgrade = &helmv2.Upgrade{CRDs: crds}
			}
			if kubeconfigSecret != "" {
				hr.Spec.KubeConfig = &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: kubeconfigSecret}}
			}
			if hr.Spec.Values, err = readValues(valuesFiles); err != nil {
				return built{}, err
			}
			for _, v := range valuesFrom {
				ref, err := parseRef("values-from", v, "", []string{"Secret", "ConfigMap"})
				if err != nil {
					return built{}, err
				}
				if ref.namespace != "" {
					return built{}, fmt.Errorf("--values-from %q: want <kind>/<name>, in the HelmRelease's namespace", v)
				}
				hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, helmv2.ValuesReference{Kind: ref.kind, Name: ref.name})
			}
			return built{objs: []client.Object{hr}, wait: helmReleaseKind}, nil
		})
	f := c.Flags()
	f.StringVar(&releaseName, "release-name", "", "Name of the Helm release; [<target-namespace>-]<name> when not given.")
	f.StringVar(&source, "source", "", "Source of --chart, <kind>/<name>[.<namespace>], kind HelmRepository or GitRepository.")
	f.StringVar(&chart, "chart", "", "Chart name (HelmRepository) or path (GitRepository).")
	f.StringVar(&chartVersion, "chart-version", "", "Chart version or semver range (HelmRepository only).")
	f.StringVar(&chartRef, "chart-ref", "", "An existing chart source instead of --chart, <kind>/<name>[.<namespace>], kind OCIRepository, HelmChart or ExternalArtifact.")
	f.StringSliceVar(&dependsOn, "depends-on", nil, "HelmReleases to be Ready first, <name> or <namespace>/<name> (several: repeat or separate with commas).")
	f.StringVar(&targetNamespace, "target-namespace", "", "Namespace to install the release in; the HelmRelease's when not given.")
	f.StringVar(&storageNamespace, "storage-namespace", "", "Namespace of the Helm release records; the target namespace when not given.")
	f.BoolVar(&createNamespace, "create-target-namespace", false, "Create the target namespace on install if it does not exist.")
	f.StringVar(&serviceAccount, "service-account", "", "ServiceAccount to impersonate when installing and upgrading.")
	f.StringVar(&strategy, "reconcile-strategy", "ChartVersion", "When the chart is fetched again: ChartVersion or Revision (of the source).")
	f.DurationVar(&chartInterval, "chart-interval", 0, "How often the HelmChart checks for new chart versions; --interval when 0.")
	f.StringSliceVar(&valuesFiles, "values", nil, "Local values.yaml files, merged in order into spec.values (several: repeat or separate with commas).")
	f.StringSliceVar(&valuesFrom, "values-from", nil, "Secret or ConfigMap with a values.yaml key, <kind>/<name> (several: repeat or separate with commas).")
	f.StringVar(&crds, "crds", "", "Upgrade policy for the chart's CRDs: Skip, Create or CreateReplace (install creates them).")
	f.StringVar(&kubeconfigSecret, "kubeconfig-secret-ref", "", "Secret with the kubeconfig of a remote cluster to install to.")
	return c
}

// readValues merges the values files in order, a later file's keys over
// an earlier one's, as Helm merges several -f files.
func readValues(files []string) (*apiextensionsv1.JSON, error) {
	if len(files) == 0 {
		return nil, nil
	}
	merged := map[string]any{}
	for _, f := range files {
		data, err := readInput("values", f)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("--values %s: %w", f, err)
		}
		merged = mergeValues(merged, m)
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

// mergeValues merges over into base: maps key by key, anything else
// replaced.
func mergeValues(base, over map[string]any) map[string]any {
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = mergeValues(bm, vm)
				continue
			}
		}
		base[k] = v
	}
	return base
}
