package bootstrap

import (
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/cli/internal/install"
)

// Name names the GitRepository, the Kustomization, the Secret and the
// folder bootstrap writes.
const Name = "plumb-system"

// Flux's defaults for flux-system: the source fetched every minute, the
// Kustomization applied again every ten.
const (
	DefaultSourceInterval = time.Minute
	DefaultSyncInterval   = 10 * time.Minute
)

// syncServiceAccount is the ServiceAccount the Kustomization acts as:
// sync-controller's own, cluster-admin in deploy/.
const syncServiceAccount = "sync-controller"

// Options say what bootstrap writes and where.
type Options struct {
	// URL is the repository, https:// (http:// with
	// Auth.AllowInsecureHTTP).
	URL string
	// Branch is written to, and created when missing.
	Branch string
	// Path is the folder of the repository the cluster is synced from;
	// the manifests go into Path/plumb-system.
	Path string
	// Interval is the GitRepository's; zero takes DefaultSourceInterval.
	Interval time.Duration
	Auth     Auth
	Author   Author
	// CommitMessageAppendix is added to the commit message after a blank
	// line, as flux's --commit-message-appendix.
	CommitMessageAppendix string
	// Install is rendered into plumb-components.yaml.
	Install install.Options
}

// Auth are the credentials of the push, also written into the Secret
// the GitRepository reads.
type Auth struct {
	Username, Password string
	BearerToken        string
	// CA is a PEM bundle the Git host's certificate is checked against.
	CA []byte
	// AllowInsecureHTTP lets URL be http://.
	AllowInsecureHTTP bool
	// PrivateKey is the PEM SSH key of an ssh:// URL (Password is then
	// its passphrase, if any).
	PrivateKey []byte
	// KnownHosts pins the SSH host's key (known_hosts lines); empty, the
	// key the host shows at the push is trusted and written into the
	// Secret, as `flux bootstrap git` scans it (SSHHostKey says which).
	KnownHosts []byte
}

func (a Auth) empty() bool {
	return a.Username == "" && a.Password == "" && a.BearerToken == "" && len(a.CA) == 0 && len(a.PrivateKey) == 0
}

// isSSH says whether url is an ssh:// repository.
func isSSH(url string) bool { return strings.HasPrefix(url, "ssh://") }

// Author signs the commit.
type Author struct {
	Name, Email string
}

// folder is Path/plumb-system, cleaned and relative to the repository.
func (o Options) folder() string { return path.Join(o.cleanPath(), Name) }

// cleanPath is Path relative to the repository's root, "." for the root.
func (o Options) cleanPath() string {
	return path.Clean("./" + strings.TrimPrefix(o.Path, "/"))
}

// Validate reports options bootstrap cannot honour.
func (o Options) Validate() error {
	switch {
	case o.URL == "":
		return fmt.Errorf("--url is required")
	case o.Branch == "":
		return fmt.Errorf("--branch is required")
	case strings.HasPrefix(o.URL, "http://") && !o.Auth.AllowInsecureHTTP:
		return fmt.Errorf("%s is plain HTTP: credentials and manifests would cross the network in clear; use https:// or --allow-insecure-http", o.URL)
	case !strings.HasPrefix(o.URL, "https://") && !strings.HasPrefix(o.URL, "http://") && !isSSH(o.URL):
		return fmt.Errorf("%s: bootstrap git takes https://, http:// or ssh:// URLs", o.URL)
	case isSSH(o.URL) && len(o.Auth.PrivateKey) == 0:
		return fmt.Errorf("%s: an ssh:// URL needs --private-key-file", o.URL)
	case !isSSH(o.URL) && len(o.Auth.PrivateKey) > 0:
		return fmt.Errorf("--private-key-file is for ssh:// URLs; %s is not one", o.URL)
	case isSSH(o.URL) && o.Auth.BearerToken != "":
		return fmt.Errorf("a bearer token is for http(s):// URLs, not %s", o.URL)
	case strings.HasPrefix(o.cleanPath(), ".."):
		return fmt.Errorf("--path %q leaves the repository", o.Path)
	case o.Auth.BearerToken != "" && (o.Auth.Username != "" || o.Auth.Password != ""):
		return fmt.Errorf("a bearer token and a username/password are exclusive")
	}
	return o.Install.Validate()
}

// Files renders what bootstrap commits, by path in the repository.
func Files(o Options) (map[string][]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// The private networks go into the kustomization, not the rendered
	// install (kustomization, below).
	inst := o.Install
	inst.AllowedPrivateNetworks = nil
	objs, err := install.Render(inst)
	if err != nil {
		return nil, err
	}
	components, err := install.YAML(objs)
	if err != nil {
		return nil, err
	}
	sync, err := install.YAML(SyncObjects(o))
	if err != nil {
		return nil, err
	}
	kustomization, err := kustomization(o)
	if err != nil {
		return nil, err
	}
	header := "# Written by plumb bootstrap git; run it again to change this file.\n"
	dir := o.folder()
	return map[string][]byte{
		path.Join(dir, "plumb-components.yaml"): append([]byte(header), components...),
		path.Join(dir, "plumb-sync.yaml"):       append([]byte(header), sync...),
		path.Join(dir, "kustomization.yaml"):    kustomization,
	}, nil
}

// kustomization is plumb-system/kustomization.yaml: the two files, and
// the patch of the install's private networks (install.PrivateNetworksPatch),
// kept out of plumb-components.yaml so that it reads as the one setting
// it is, survives an upgrade that rewrites the components, and a commit
// can change it as any other line Plumb applies to itself.
func kustomization(o Options) ([]byte, error) {
	k := []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - plumb-components.yaml
  - plumb-sync.yaml
`)
	patch := install.PrivateNetworksPatch(o.Install)
	if patch == nil {
		return k, nil
	}
	patches, err := yaml.Marshal(map[string]any{"patches": []map[string]any{patch}})
	if err != nil {
		return nil, err
	}
	return append(k, patches...), nil
}

// SyncObjects are the GitRepository of the repository and the
// Kustomization of its path, both named Name in install.Namespace.
func SyncObjects(o Options) []*unstructured.Unstructured {
	interval := o.Interval
	if interval == 0 {
		interval = DefaultSourceInterval
	}
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: install.Namespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       o.URL,
			Interval:  metav1.Duration{Duration: interval},
			Reference: &sourcev1.GitRepositoryRef{Branch: o.Branch},
		},
	}
	if !o.Auth.empty() {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: Name}
	}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: install.Namespace},
		Spec: kustomizev1.KustomizationSpec{
			Interval:           metav1.Duration{Duration: DefaultSyncInterval},
			Path:               o.cleanPath(),
			Prune:              true,
			ServiceAccountName: syncServiceAccount,
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: Name},
		},
	}
	return []*unstructured.Unstructured{toUnstructured(repo), toUnstructured(ks)}
}

// ClusterObjects are what bootstrap applies besides the install: the
// Secret the GitRepository reads (GitSecret, when there are credentials)
// and SyncObjects, in the order they must be applied.
func ClusterObjects(o Options) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	if secret := GitSecret(o); secret != nil {
		objs = append(objs, toUnstructured(secret))
	}
	return append(objs, SyncObjects(o)...)
}

// GitSecret is the Secret the GitRepository reads, or nil when the
// repository needs no credentials.
func GitSecret(o Options) *corev1.Secret {
	if o.Auth.empty() {
		return nil
	}
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: install.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	set := func(key string, v []byte) {
		if len(v) > 0 {
			s.Data[key] = v
		}
	}
	if isSSH(o.URL) {
		// source-controller's keys of an ssh:// source: the key, its
		// passphrase and the host keys it trusts.
		set("identity", o.Auth.PrivateKey)
		set("password", []byte(o.Auth.Password))
		set("known_hosts", o.Auth.KnownHosts)
		return s
	}
	set("username", []byte(o.Auth.Username))
	set("password", []byte(o.Auth.Password))
	set("bearerToken", []byte(o.Auth.BearerToken))
	set("ca.crt", o.Auth.CA)
	return s
}

// toUnstructured turns a typed object into the map form install.YAML
// prints, without the empty status and creationTimestamp of a typed
// object never read from a server.
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// A typed object of this package's own making always converts.
		panic(err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}
