package helm

import (
	"context"
	"fmt"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Repository is a chart repository that dependencies may come from: an
// HTTP one with its verified index and fetcher, or an OCI registry.
type Repository struct {
	// URL is the repository's URL as its HelmRepository gives it.
	URL string
	// Index and Fetcher, for an HTTP repository.
	Index   *repo.IndexFile
	Fetcher *Fetcher
	// Registry and Ref (host/path), for an OCI repository.
	Registry *Registry
	Ref      string
}

// Fetch resolves the semver range (or exact version) version of chart
// name and downloads its archive, at most maxBytes, checked against the
// index entry's digest where the index gives one (a registry's client
// checks the layer's digest itself). The archive is not loaded: that is a
// chart worker's (pkg/helmpackage.Build).
func (r *Repository) Fetch(ctx context.Context, name, version string, maxBytes int64) ([]byte, error) {
	switch {
	case r.Registry != nil:
		ref := r.Ref + "/" + name
		tag, err := r.Registry.Resolve(ctx, ref, version)
		if err != nil {
			return nil, err
		}
		return r.Registry.Pull(ref, tag)
	case r.Index != nil && r.Fetcher != nil:
		cv, u, err := ResolveChart(r.Index, r.URL, name, version)
		if err != nil {
			return nil, err
		}
		tgz, err := r.Fetcher.Get(u, maxBytes)
		if err != nil {
			return nil, err
		}
		if err := VerifyChartDigest(cv, tgz); err != nil {
			return nil, err
		}
		return tgz, nil
	}
	return nil, fmt.Errorf("repository %s cannot serve charts", r.URL)
}
