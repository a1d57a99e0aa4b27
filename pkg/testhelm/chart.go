package testhelm

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/provenance"
)

// Files maps a path inside a chart (templates/cm.yaml, values.yaml,
// charts/dep/Chart.yaml, ...) to its content.
type Files map[string]string

// Chart describes a chart to build. Chart.yaml is generated from Name,
// Version, AppVersion and Dependencies unless Files holds one.
type Chart struct {
	Name         string
	Version      string
	AppVersion   string
	Dependencies []*chart.Dependency
	Files        Files
}

// modTime is the modification time of every packaged file: fixed, so the
// same chart always packages to the same bytes.
var modTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// ChartFiles returns the chart's files with Chart.yaml, each path under
// prefix (for example the chart's folder in a Git repository).
func ChartFiles(c Chart, prefix string) (Files, error) {
	out := Files{}
	if _, ok := c.Files[chartutil.ChartfileName]; !ok {
		md := chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.Name, Version: c.Version,
			AppVersion: c.AppVersion, Dependencies: c.Dependencies}
		b, err := yaml.Marshal(md)
		if err != nil {
			return nil, err
		}
		out[path.Join(prefix, chartutil.ChartfileName)] = string(b)
	}
	for name, content := range c.Files {
		out[path.Join(prefix, name)] = content
	}
	return out, nil
}

// Load builds the chart with the SDK's loader.
func Load(c Chart) (*chart.Chart, error) {
	files, err := ChartFiles(c, "")
	if err != nil {
		return nil, err
	}
	var buffered []*archive.BufferedFile
	for _, name := range slices.Sorted(maps.Keys(files)) {
		buffered = append(buffered, &archive.BufferedFile{Name: name, ModTime: modTime, Data: []byte(files[name])})
	}
	ch, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", c.Name, err)
	}
	return ch, nil
}

// Package builds the chart and returns the .tgz the SDK packages.
func Package(c Chart) ([]byte, error) {
	ch, err := Load(c)
	if err != nil {
		return nil, err
	}
	return Save(ch)
}

// PackageDir loads the chart in dir with the SDK and packages it.
func PackageDir(dir string) ([]byte, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return Save(ch)
}

// PackageDirVersion packages the chart in dir as PackageDir does, at
// version instead of its Chart.yaml's: one folder serves several
// versions of a chart.
func PackageDirVersion(dir, version string) ([]byte, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	ch.Metadata.Version = version
	return Save(ch)
}

// Save packages a loaded chart with the SDK's chartutil.Save and returns
// the bytes. Modification times are fixed first, so equal charts give equal
// bytes.
func Save(ch *chart.Chart) ([]byte, error) {
	ch.StampModTimes(modTime)
	dir, err := os.MkdirTemp("", "plumb-testhelm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// digestOf returns the sha256 hex of a .tgz, the index's digest field.
func digestOf(tgz []byte) (string, error) { return provenance.Digest(bytes.NewReader(tgz)) }

// filename is where a chart's archive is served in a repository.
func filename(name, version string) string { return filepath.Base(name + "-" + version + ".tgz") }

// WriteCharts writes each chart's files (ChartFiles) into root under its
// folder, a source tree as a Git repository would hold it.
func WriteCharts(root string, charts map[string]Chart) error {
	for prefix, c := range charts {
		files, err := ChartFiles(c, prefix)
		if err != nil {
			return err
		}
		if err := WriteFiles(root, files); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes files into root.
func WriteFiles(root string, files Files) error {
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
