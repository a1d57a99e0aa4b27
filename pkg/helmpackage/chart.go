package helmpackage

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// epoch is the modification time of every file of a packaged chart: fixed,
// so that the same chart always packages to the same bytes (and the same
// digest, so nothing downstream renders again for nothing).
var epoch = time.Unix(0, 0).UTC()

// LoadArchive loads a chart archive with the SDK loader, within its
// decompressed-size budget, once CheckArchive has passed its headers.
func LoadArchive(tgz []byte) (*chart.Chart, error) {
	if err := CheckArchive(tgz); err != nil {
		return nil, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("loading the chart archive: %w", err)
	}
	return ch, nil
}

// LoadDir loads the chart in dir with the SDK loader, within its
// decompressed-size budget.
func LoadDir(dir string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return ch, nil
}

// MergeValuesFiles merges the named files of the chart, in order, over its
// values.yaml (later files win, maps merged key by key as Helm merges -f
// files) and makes the result the chart's values.yaml. It returns the
// files it merged: all of them, or those the chart has when ignoreMissing
// (Flux's ignoreMissingValuesFiles) is set. Nothing changes without
// files. A file that is not a YAML map is an error, as is a missing one
// unless ignoreMissing.
func MergeValuesFiles(ch *chart.Chart, files []string, ignoreMissing bool) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	var used []string
	merged := map[string]any{}
	if ch.Values != nil {
		merged = loader.MergeMaps(merged, ch.Values)
	}
	for _, name := range files {
		if name == chartutil.ValuesfileName {
			used = append(used, name)
			continue
		}
		f := rawFile(ch, name)
		if f == nil {
			if ignoreMissing {
				continue
			}
			return nil, fmt.Errorf("values file %q is not in chart %s", name, ch.Name())
		}
		vals, err := common.ReadValues(f.Data)
		if err != nil {
			return nil, fmt.Errorf("values file %q: %w", name, err)
		}
		merged = loader.MergeMaps(merged, vals)
		used = append(used, name)
	}
	b, err := yaml.Marshal(merged)
	if err != nil {
		return nil, err
	}
	ch.Values = merged
	if f := rawFile(ch, chartutil.ValuesfileName); f != nil {
		f.Data = b
	} else {
		ch.Raw = append(ch.Raw, &common.File{Name: chartutil.ValuesfileName, Data: b})
	}
	return used, nil
}

func rawFile(ch *chart.Chart, name string) *common.File {
	name = strings.TrimPrefix(name, "./")
	for _, f := range ch.Raw {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Package saves the chart with the SDK's chartutil.Save into outDir ("":
// a temporary folder of its own) after making it canonical: files and
// dependencies in name order, every time fixed. The same chart gives the
// same bytes. chartutil.Save writes a file, so a chart worker packages
// into a folder its parent made for the request (doc.go).
func Package(ch *chart.Chart, outDir string) ([]byte, error) {
	canonical(ch)
	if outDir == "" {
		dir, err := os.MkdirTemp("", "plumb-helm-package-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		outDir = dir
	}
	p, err := chartutil.Save(ch, outDir)
	if err != nil {
		return nil, fmt.Errorf("packaging the chart: %w", err)
	}
	defer os.Remove(p)
	return os.ReadFile(p)
}

func canonical(ch *chart.Chart) {
	byName := func(a, b *common.File) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(ch.Templates, byName)
	slices.SortStableFunc(ch.Files, byName)
	slices.SortStableFunc(ch.Raw, byName)
	deps := slices.Clone(ch.Dependencies())
	slices.SortStableFunc(deps, func(a, b *chart.Chart) int {
		if c := strings.Compare(a.Name(), b.Name()); c != 0 {
			return c
		}
		return strings.Compare(a.Metadata.Version, b.Metadata.Version)
	})
	for _, d := range deps {
		canonical(d)
	}
	ch.SetDependencies(deps...)
	ch.StampModTimes(epoch)
}

// DefaultMaxExtractedSize is the SDK loader's default budget for the
// decompressed files of one chart, the default of source-controller's
// --helm-chart-max-extracted-size.
const DefaultMaxExtractedSize int64 = 100 << 20
