// Package helmrender is a STAND-IN for wt-b's package of the same name, so
// that render-controller's HelmRelease reconciler builds and its tests run
// before wt-b's version is merged. It is deleted before that merge.
package helmrender

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

type Capabilities struct {
	KubeVersion string
	APIVersions []string
}

type Limits = render.Limits

type Options struct {
	ReleaseName, Namespace string
	Values                 map[string]any
	Capabilities           Capabilities
	IsInstall              bool
	CRDs                   string
	PostRenderers          []helmv2.PostRenderer
	Limits                 Limits
}

type Result struct {
	Manifests                             []byte
	ChartName, ChartVersion, ConfigDigest string
	Objects                               int
}

func Render(ctx context.Context, chartArchive []byte, opts Options) (*Result, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(chartArchive))
	if err != nil {
		return nil, &render.Error{Reason: kustomizev1.BuildFailedReason, Err: err}
	}
	kv, err := common.ParseKubeVersion(opts.Capabilities.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := &common.Capabilities{KubeVersion: *kv, APIVersions: opts.Capabilities.APIVersions}
	vals, err := util.ToRenderValues(ch, opts.Values, common.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, IsInstall: opts.IsInstall, IsUpgrade: !opts.IsInstall}, caps)
	if err != nil {
		return nil, &render.Error{Reason: kustomizev1.BuildFailedReason, Err: err}
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, &render.Error{Reason: kustomizev1.BuildFailedReason, Err: err}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") && strings.TrimSpace(files[n]) != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", n, strings.TrimSpace(files[n]))
	}
	return &Result{Manifests: b.Bytes(), ChartName: ch.Name(), ChartVersion: ch.Metadata.Version, ConfigDigest: ConfigDigest(opts.Values), Objects: len(names)}, nil
}

func ConfigDigest(values map[string]any) string {
	b, _ := json.Marshal(values)
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b))
}
