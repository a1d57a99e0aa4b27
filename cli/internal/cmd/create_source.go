package cmd

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/fluxport"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// sourceOpts are the flags every `create source` subcommand shares.
type sourceOpts struct {
	*createOpts
	fetchTimeout time.Duration
}

func newCreateSourceCmd(o *createOpts) *cobra.Command {
	s := &sourceOpts{createOpts: o}
	c := &cobra.Command{
		Use:   "source",
		Short: "Create or update a GitRepository, HelmRepository, OCIRepository, Bucket or HelmChart",
	}
	c.PersistentFlags().DurationVar(&s.fetchTimeout, "fetch-timeout", 0, "Timeout of one fetch (spec.timeout); the controller's default when 0.")
	c.AddCommand(newCreateSourceGitCmd(s), newCreateSourceHelmCmd(s), newCreateSourceOCICmd(s), newCreateSourceBucketCmd(s), newCreateSourceChartCmd(s))
	return c
}

// timeout is spec.timeout from --fetch-timeout, nil when not given.
func (s *sourceOpts) timeout() *metav1.Duration {
	if s.fetchTimeout <= 0 {
		return nil
	}
	return &metav1.Duration{Duration: s.fetchTimeout}
}

// localRef is a LocalObjectReference to name, nil for "".
func localRef(name string) *meta.LocalObjectReference {
	if name == "" {
		return nil
	}
	return &meta.LocalObjectReference{Name: name}
}

// ignorePaths is spec.ignore from --ignore-paths: one pattern a line.
func ignorePaths(paths []string) *string {
	if len(paths) == 0 {
		return nil
	}
	s := strings.Join(paths, "\n")
	return &s
}

// withSecret puts a generated Secret before the object that names it.
func withSecret(secret client.Object, obj client.Object, k *kind) built {
	if secret == nil {
		return built{objs: []client.Object{obj}, wait: k}
	}
	return built{objs: []client.Object{secret, obj}, wait: k}
}

func newCreateSourceGitCmd(s *sourceOpts) *cobra.Command {
	var a gitAuth
	var rawURL, branch, tag, semver, refName, commit, secretRef, proxySecretRef, provider string
	var recurseSubmodules bool
	var ignore, sparse []string
	c := s.leaf("git", "Create or update a GitRepository",
		"  plumb create source git podinfo --url=https://github.com/stefanprodan/podinfo --branch=master\n"+
			"  plumb create source git podinfo --url=https://github.com/stefanprodan/podinfo --tag-semver='>=6.0.0 <7.0.0'\n"+
			"  plumb create source git podinfo --url=ssh://git@github.com/stefanprodan/podinfo --branch=master --known-hosts-file=./known_hosts",
		func(t target) (built, error) {
			if rawURL == "" {
				return built{}, errRequired("url")
			}
			u, err := gitURL(rawURL)
			if err != nil {
				return built{}, err
			}
			if branch == "" && tag == "" && semver == "" && commit == "" && refName == "" {
				return built{}, errors.New("a Git reference is required: give --branch, --tag, --tag-semver, --ref-name or --commit")
			}
			if provider != "" {
				if err := oneOf("provider", provider, []string{"generic", "github"}); err != nil {
					return built{}, err
				}
			}
			repo := &sourcev1.GitRepository{
				ObjectMeta: objectMeta(t),
				Spec: sourcev1.GitRepositorySpec{
					URL: rawURL, Interval: metav1.Duration{Duration: s.interval}, Timeout: s.timeout(),
					Reference: &sourcev1.GitRepositoryRef{}, RecurseSubmodules: recurseSubmodules,
					Ignore: ignorePaths(ignore), SparseCheckout: sparse, Provider: provider,
					SecretRef: localRef(secretRef), ProxySecretRef: localRef(proxySecretRef),
				},
			}
			// Flux's precedence: a commit (with the branch it is on), else
			// a reference name, else a semver range, else a tag, else the
			// branch.
			ref := repo.Spec.Reference
			switch {
			case commit != "":
				ref.Commit, ref.Branch = commit, branch
			case refName != "":
				ref.Name = refName
			case semver != "":
				ref.SemVer = semver
			case tag != "":
				ref.Tag = tag
			default:
				ref.Branch = branch
			}
			if secretRef != "" {
				if a.given() {
					return built{}, errors.New("give --secret-ref or credentials to store in a new Secret, not both")
				}
				return withSecret(nil, repo, gitRepositoryKind), nil
			}
			if !a.given() && u.Scheme != "ssh" {
				return withSecret(nil, repo, gitRepositoryKind), nil
			}
			data, pub, err := a.data(rawURL, false)
			if err != nil {
				return built{}, err
			}
			if pub != "" {
				fmt.Fprintf(s.g.errOut, "◎ deploy key (add it to the repository, read-only): %s", pub)
			}
			if u.Scheme == "http" && (a.username != "" || a.password != "") {
				fmt.Fprintln(s.g.errOut, "◎ warning: credentials are sent in the clear over http://")
			}
			secret := newSecret(t, data)
			repo.Spec.SecretRef = localRef(secret.Name)
			return withSecret(secret, repo, gitRepositoryKind), nil
		})
	f := c.Flags()
	f.StringVar(&rawURL, "url", "", "Git address: ssh://git@host/org/repository, https://… or http://….")
	f.StringVar(&branch, "branch", "", "Git branch.")
	f.StringVar(&tag, "tag", "", "Git tag.")
	f.StringVar(&semver, "tag-semver", "", "Git tag semver range.")
	f.StringVar(&refName, "ref-name", "", "Git reference name (refs/heads/…, refs/tags/…, refs/pull/…/head).")
	f.StringVar(&commit, "commit", "", "Git commit SHA.")
	f.StringVar(&secretRef, "secret-ref", "", "Name of an existing Secret with the credentials (instead of generating one).")
	f.StringVar(&proxySecretRef, "proxy-secret-ref", "", "Name of an existing Secret with the proxy address and credentials.")
	f.StringVar(&provider, "provider", "", "How the Secret authenticates: generic or github (a GitHub App).")
	f.BoolVar(&recurseSubmodules, "recurse-submodules", false, "Include the repository's Git submodules in the artifact.")
	f.StringSliceVar(&ignore, "ignore-paths", nil, "Paths to leave out of the artifact, .gitignore patterns (several: repeat or separate with commas).")
	f.StringSliceVar(&sparse, "sparse-checkout-paths", nil, "Directories to check out alone (several: repeat or separate with commas).")
	a.bind(c, "ca-file")
	return c
}

func newCreateSourceHelmCmd(s *sourceOpts) *cobra.Command {
	var tls tlsFiles
	var rawURL, username, password, secretRef, ociProvider string
	var passCredentials bool
	c := s.leaf("helm", "Create or update a HelmRepository",
		"  plumb create source helm podinfo --url=https://stefanprodan.github.io/podinfo\n"+
			"  plumb create source helm podinfo --url=oci://ghcr.io/stefanprodan/charts --username=u --password=p",
		func(t target) (built, error) {
			if rawURL == "" {
				return built{}, errRequired("url")
			}
			u, err := url.Parse(rawURL)
			if err != nil {
				return built{}, fmt.Errorf("--url: %w", err)
			}
			if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci" {
				return built{}, fmt.Errorf("--url: scheme %q is not supported: use http, https or oci", u.Scheme)
			}
			if u.Host == "" {
				return built{}, fmt.Errorf("--url %q has no host", rawURL)
			}
			if ociProvider != "" && ociProvider != "generic" {
				return built{}, refusedFlag("oci-provider", sourcev1.HelmRepositoryKind, "spec.provider")
			}
			repo := &sourcev1.HelmRepository{
				ObjectMeta: objectMeta(t),
				Spec: sourcev1.HelmRepositorySpec{
					URL: rawURL, Interval: metav1.Duration{Duration: s.interval}, Timeout: s.timeout(),
					PassCredentials: passCredentials, SecretRef: localRef(secretRef),
				},
			}
			if u.Scheme == "oci" {
				repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
			}
			data, err := tls.data()
			if err != nil {
				return built{}, err
			}
			if (username == "") != (password == "") {
				return built{}, errors.New("--username and --password go together")
			}
			if username != "" {
				data[keyUsername], data[keyPassword] = []byte(username), []byte(password)
			}
			if len(data) == 0 {
				return withSecret(nil, repo, helmRepositoryKind), nil
			}
			if secretRef != "" {
				return built{}, errors.New("give --secret-ref or credentials to store in a new Secret, not both")
			}
			// source-controller reads username, password and the TLS keys
			// of secretRef alike for both repository types.
			secret := newSecret(t, data)
			repo.Spec.SecretRef = localRef(secret.Name)
			return withSecret(secret, repo, helmRepositoryKind), nil
		})
	f := c.Flags()
	f.StringVar(&rawURL, "url", "", "Helm repository address: https://… (an index.yaml) or oci://… (a registry).")
	f.StringVarP(&username, "username", "u", "", "Basic authentication username.")
	f.StringVarP(&password, "password", "p", "", "Basic authentication password.")
	f.StringVar(&secretRef, "secret-ref", "", "Name of an existing Secret with basic auth or TLS credentials.")
	f.StringVar(&ociProvider, "oci-provider", "", "Cloud registry login; only generic (none) is supported.")
	f.BoolVar(&passCredentials, "pass-credentials", false, "Send the credentials to every host the index links to, not only the repository's.")
	tls.bind(c, "cert-file", "key-file", "ca-file")
	return c
}

func newCreateSourceOCICmd(s *sourceOpts) *cobra.Command {
	var rawURL, tag, semver, digest, secretRef, proxySecretRef, serviceAccount, certRef, provider string
	var verifyProvider, verifySecretRef, verifySubject, verifyIssuer, layerSelector string
	var insecure bool
	var ignore []string
	c := s.leaf("oci", "Create or update an OCIRepository",
		"  plumb create source oci podinfo --url=oci://ghcr.io/stefanprodan/manifests/podinfo --tag=6.6.2\n"+
			"  plumb create source oci podinfo --url=oci://ghcr.io/stefanprodan/manifests/podinfo --tag-semver='6.x' --verify-provider=cosign --verify-secret-ref=cosign-pub",
		func(t target) (built, error) {
			switch {
			case rawURL == "":
				return built{}, errRequired("url")
			case !strings.HasPrefix(rawURL, "oci://"):
				return built{}, fmt.Errorf("--url %q: an OCIRepository URL starts with oci://", rawURL)
			case tag == "" && semver == "" && digest == "":
				return built{}, errors.New("--tag, --tag-semver or --digest is required")
			case serviceAccount != "":
				return built{}, refusedFlag("service-account", sourcev1.OCIRepositoryKind, "spec.serviceAccountName")
			case provider != "" && provider != "generic":
				return built{}, refusedFlag("provider", sourcev1.OCIRepositoryKind, "spec.provider")
			}
			repo := &sourcev1.OCIRepository{
				ObjectMeta: objectMeta(t),
				Spec: sourcev1.OCIRepositorySpec{
					URL: rawURL, Interval: metav1.Duration{Duration: s.interval}, Timeout: s.timeout(),
					Reference: &sourcev1.OCIRepositoryRef{Tag: tag, SemVer: semver, Digest: digest},
					SecretRef: localRef(secretRef), ProxySecretRef: localRef(proxySecretRef), CertSecretRef: localRef(certRef),
					Insecure: insecure, Ignore: ignorePaths(ignore),
				},
			}
			v, err := verification(sourcev1.OCIRepositoryKind, verifyProvider, verifySecretRef, verifySubject, verifyIssuer)
			if err != nil {
				return built{}, err
			}
			repo.Spec.Verify = v
			if layerSelector != "" {
				mediaType, op, ok := strings.Cut(layerSelector, ":")
				if !ok || mediaType == "" {
					return built{}, fmt.Errorf("--layer-selector %q: want <media-type>:<operation>", layerSelector)
				}
				if op != "extract" && op != "copy" {
					return built{}, fmt.Errorf("--layer-selector %q: the operation is extract or copy", layerSelector)
				}
				repo.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: mediaType, Operation: op}
			}
			return withSecret(nil, repo, ociRepositoryKind), nil
		})
	f := c.Flags()
	f.StringVar(&rawURL, "url", "", "OCI repository address, oci://HOST/REPO.")
	f.StringVar(&tag, "tag", "", "Artifact tag.")
	f.StringVar(&semver, "tag-semver", "", "Artifact tag semver range.")
	f.StringVar(&digest, "digest", "", "Artifact digest, sha256:….")
	f.StringVar(&secretRef, "secret-ref", "", "Name of a kubernetes.io/dockerconfigjson Secret (plumb create secret oci).")
	f.StringVar(&proxySecretRef, "proxy-secret-ref", "", "Name of an existing Secret with the proxy address and credentials.")
	f.StringVar(&certRef, "cert-ref", "", "Name of a Secret with TLS certificates (plumb create secret tls).")
	f.StringVar(&serviceAccount, "service-account", "", "Not supported: Plumb implements no workload identity.")
	f.StringVar(&provider, "provider", "", "Cloud registry login; only generic (none) is supported.")
	f.StringVar(&verifyProvider, "verify-provider", "", "Signature verification: cosign or notation.")
	f.StringVar(&verifySecretRef, "verify-secret-ref", "", "Name of the Secret with the trusted keys or certificates.")
	f.StringVar(&verifySubject, "verify-subject", "", "Not supported: keyless verification.")
	f.StringVar(&verifyIssuer, "verify-issuer", "", "Not supported: keyless verification.")
	f.StringSliceVar(&ignore, "ignore-paths", nil, "Paths to leave out of the artifact (several: repeat or separate with commas).")
	f.BoolVar(&insecure, "insecure", false, "Reach the registry over plain HTTP.")
	f.StringVar(&layerSelector, "layer-selector", "", "Layer that holds the content, <media-type>:<operation> (extract or copy).")
	return c
}

// verification is spec.verify from the --verify-* flags: a provider and
// the Secret of trusted keys; keyless identity flags are refused.
func verification(kind, provider, secretRef, subject, issuer string) (*sourcev1.OCIRepositoryVerification, error) {
	switch {
	case subject != "":
		return nil, refusedFlag("verify-subject", kind, "spec.verify.matchOIDCIdentity")
	case issuer != "":
		return nil, refusedFlag("verify-issuer", kind, "spec.verify.matchOIDCIdentity")
	case provider == "" && secretRef == "":
		return nil, nil
	case provider == "":
		return nil, errors.New("--verify-secret-ref needs --verify-provider")
	case secretRef == "":
		return nil, fmt.Errorf("--verify-provider needs --verify-secret-ref; keyless verification is not supported: %s", fluxport.Refused(kind, "spec.verify.matchOIDCIdentity"))
	}
	if err := oneOf("verify-provider", provider, []string{sourcev1.OCIVerifyCosign, sourcev1.OCIVerifyNotation}); err != nil {
		return nil, err
	}
	return &sourcev1.OCIRepositoryVerification{Provider: provider, SecretRef: meta.LocalObjectReference{Name: secretRef}}, nil
}

func newCreateSourceBucketCmd(s *sourceOpts) *cobra.Command {
	var provider, bucketName, endpoint, accessKey, secretKey, region, secretRef, proxySecretRef string
	var insecure bool
	var ignore []string
	c := s.leaf("bucket", "Create or update a Bucket",
		"  plumb create source bucket podinfo --bucket-name=podinfo --endpoint=minio.minio.svc.cluster.local:9000 --insecure --access-key=k --secret-key=s",
		func(t target) (built, error) {
			switch {
			case bucketName == "":
				return built{}, errRequired("bucket-name")
			case endpoint == "":
				return built{}, errRequired("endpoint")
			}
			if err := oneOf("provider", provider, []string{"generic", "aws", "gcp", "azure"}); err != nil {
				return built{}, err
			}
			b := &sourcev1.Bucket{
				ObjectMeta: objectMeta(t),
				Spec: sourcev1.BucketSpec{
					Provider: provider, BucketName: bucketName, Endpoint: endpoint, Region: region, Insecure: insecure,
					Interval: metav1.Duration{Duration: s.interval}, Timeout: s.timeout(), Ignore: ignorePaths(ignore),
					SecretRef: localRef(secretRef), ProxySecretRef: localRef(proxySecretRef),
				},
			}
			if accessKey == "" && secretKey == "" {
				return withSecret(nil, b, bucketKind), nil
			}
			if secretRef != "" {
				return built{}, errors.New("give --secret-ref or --access-key and --secret-key, not both")
			}
			if accessKey == "" || secretKey == "" {
				return built{}, errors.New("--access-key and --secret-key go together")
			}
			secret := newSecret(t, map[string][]byte{keyAccessKey: []byte(accessKey), keySecretKey: []byte(secretKey)})
			b.Spec.SecretRef = localRef(secret.Name)
			return withSecret(secret, b, bucketKind), nil
		})
	f := c.Flags()
	f.StringVar(&provider, "provider", "generic", "Object storage provider: generic (S3-compatible), aws, gcp or azure.")
	f.StringVar(&bucketName, "bucket-name", "", "Bucket name.")
	f.StringVar(&endpoint, "endpoint", "", "Bucket endpoint address.")
	f.StringVar(&accessKey, "access-key", "", "Access key, stored in a new Secret as accesskey.")
	f.StringVar(&secretKey, "secret-key", "", "Secret key, stored in a new Secret as secretkey.")
	f.StringVar(&region, "region", "", "Bucket region.")
	f.BoolVar(&insecure, "insecure", false, "Reach the endpoint over plain HTTP.")
	f.StringVar(&secretRef, "secret-ref", "", "Name of an existing Secret with the credentials.")
	f.StringVar(&proxySecretRef, "proxy-secret-ref", "", "Name of an existing Secret with the proxy address and credentials.")
	f.StringSliceVar(&ignore, "ignore-paths", nil, "Paths to leave out of the artifact (several: repeat or separate with commas).")
	return c
}

func newCreateSourceChartCmd(s *sourceOpts) *cobra.Command {
	var chart, version, source, strategy, verifyProvider, verifySecretRef, verifySubject, verifyIssuer string
	c := s.leaf("chart", "Create or update a HelmChart",
		"  plumb create source chart podinfo --source=HelmRepository/podinfo --chart=podinfo --chart-version='6.x'\n"+
			"  plumb create source chart podinfo --source=GitRepository/podinfo --chart=./charts/podinfo",
		func(t target) (built, error) {
			switch {
			case source == "":
				return built{}, errRequired("source")
			case chart == "":
				return built{}, errRequired("chart")
			}
			ref, err := parseRef("source", source, "", []string{sourcev1.HelmRepositoryKind, sourcev1.GitRepositoryKind, sourcev1.BucketKind})
			if err != nil {
				return built{}, err
			}
			if ref.namespace != "" {
				return built{}, fmt.Errorf("--source %q: a HelmChart's source is in its own namespace", source)
			}
			if err := oneOf("reconcile-strategy", strategy, []string{"ChartVersion", "Revision"}); err != nil {
				return built{}, err
			}
			v, err := verification(sourcev1.HelmChartKind, verifyProvider, verifySecretRef, verifySubject, verifyIssuer)
			if err != nil {
				return built{}, err
			}
			hc := &sourcev1.HelmChart{
				ObjectMeta: objectMeta(t),
				Spec: sourcev1.HelmChartSpec{
					Chart: chart, Version: version, Interval: metav1.Duration{Duration: s.interval},
					SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: ref.kind, Name: ref.name},
					ReconcileStrategy: strategy, Verify: v,
				},
			}
			return withSecret(nil, hc, helmChartKind), nil
		})
	f := c.Flags()
	f.StringVar(&chart, "chart", "", "Chart name (HelmRepository) or path (GitRepository, Bucket).")
	f.StringVar(&version, "chart-version", "", "Chart version or semver range (HelmRepository only).")
	f.StringVar(&source, "source", "", "Source of the chart, <kind>/<name>, kind HelmRepository, GitRepository or Bucket.")
	f.StringVar(&strategy, "reconcile-strategy", "ChartVersion", "When to make a new artifact: ChartVersion or Revision (of the source).")
	f.StringVar(&verifyProvider, "verify-provider", "", "Signature verification of an OCI chart: cosign or notation.")
	f.StringVar(&verifySecretRef, "verify-secret-ref", "", "Name of the Secret with the trusted keys or certificates.")
	f.StringVar(&verifySubject, "verify-subject", "", "Not supported: keyless verification.")
	f.StringVar(&verifyIssuer, "verify-issuer", "", "Not supported: keyless verification.")
	return c
}
