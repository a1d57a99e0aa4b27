package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/cli/internal/bootstrap"
	"plumb.dev/cli/internal/install"
)

func newBootstrapCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "bootstrap",
		Short: "Install Plumb and have it manage itself from a Git repository",
	}
	c.AddCommand(newBootstrapGitCmd(g))
	return c
}

// bootstrapGitOptions are the flags of `plumb bootstrap git` that are not
// bootstrap.Options themselves.
type bootstrapGitOptions struct {
	o               bootstrap.Options
	password        string
	withBearerToken bool
	caFile          string
	privateKeyFile  string
	knownHostsFile  string
}

func newBootstrapGitCmd(g *globals) *cobra.Command {
	b := bootstrapGitOptions{o: bootstrap.Options{Install: install.DefaultOptions(installVersion())}}
	c := &cobra.Command{
		Use:   "git",
		Short: "Commit Plumb's install and sync manifests to a Git repository, install them, and sync the cluster from it",
		Long: "bootstrap git writes " + bootstrap.Name + "/ under --path of --branch of the repository at --url:\n" +
			"the install (what `plumb install --export` prints for the same flags) and a GitRepository\n" +
			"and a Kustomization named " + bootstrap.Name + " that sync --path; it commits and pushes only\n" +
			"when these files changed. It then installs Plumb as `plumb install` does, writes the\n" +
			"credentials as the Secret " + bootstrap.Name + " the GitRepository reads, applies the GitRepository\n" +
			"and the Kustomization, and waits until the Kustomization has applied the pushed commit.\n" +
			"From then on Plumb manages itself: a commit that changes an image tag or a flag in\n" +
			"plumb-components.yaml upgrades it. Running bootstrap again with the same flags changes\n" +
			"nothing; with other flags (a --version) it commits the change and upgrades.",
		Example: "  plumb bootstrap git --url=https://git.example.com/ops/fleet.git --branch=main \\\n" +
			"    --path=clusters/production --username=git --password=\"$GIT_TOKEN\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := b.complete(); err != nil {
				return err
			}
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			g.findAPIServerEndpoints(ctx, cmd, &b.o.Install)
			return g.bootstrapGit(ctx, b.o)
		},
	}
	f := c.Flags()
	f.StringVar(&b.o.URL, "url", "", "The Git repository, https:// (http:// with --allow-insecure-http).")
	f.StringVar(&b.o.Branch, "branch", "main", "The branch to commit to and sync from; created from the default branch when missing.")
	f.StringVar(&b.o.Path, "path", "", "The folder of the repository the cluster syncs; Plumb's manifests go into <path>/"+bootstrap.Name+".")
	f.StringVarP(&b.o.Auth.Username, "username", "u", "git", "The username of basic auth, for the push and the GitRepository.")
	f.StringVarP(&b.password, "password", "p", "", "The password or token of basic auth; read from $GIT_PASSWORD when empty.")
	f.BoolVar(&b.withBearerToken, "with-bearer-token", false, "Send --password as a bearer token instead of basic auth (the Secret then holds bearerToken).")
	f.StringVar(&b.caFile, "ca-file", "", "A PEM file of the certificate authorities the Git host's certificate is checked against.")
	f.StringVar(&b.privateKeyFile, "private-key-file", "", "The SSH private key of an ssh:// URL, for the push and the GitRepository; --password is its passphrase.")
	f.StringVar(&b.knownHostsFile, "known-hosts-file", "", "known_hosts lines the SSH host's key must match; without it the key the host shows is trusted and its fingerprint printed.")
	f.BoolVar(&b.o.Auth.AllowInsecureHTTP, "allow-insecure-http", false, "Allow an http:// URL: the credentials and manifests then cross the network in clear.")
	f.DurationVar(&b.o.Interval, "interval", bootstrap.DefaultSourceInterval, "How often the GitRepository fetches.")
	f.StringVar(&b.o.Author.Name, "author-name", "Plumb", "The author of the commit.")
	f.StringVar(&b.o.Author.Email, "author-email", "", "The author's email address.")
	f.StringVar(&b.o.CommitMessageAppendix, "commit-message-appendix", "", "Text added to the commit message after a blank line (e.g. [skip ci]).")
	installFlags(f, &b.o.Install)
	return c
}

// complete reads the flags that need more than a variable.
func (b *bootstrapGitOptions) complete() error {
	if b.password == "" {
		b.password = os.Getenv("GIT_PASSWORD")
	}
	if b.withBearerToken {
		if b.password == "" {
			return fmt.Errorf("--with-bearer-token needs the token in --password or $GIT_PASSWORD")
		}
		b.o.Auth.BearerToken, b.o.Auth.Username = b.password, ""
	} else {
		b.o.Auth.Password = b.password
		if b.password == "" {
			// Anonymous: a username alone would be written into a Secret
			// for nothing.
			b.o.Auth.Username = ""
		}
	}
	for _, f := range []struct {
		name string
		path string
		into *[]byte
	}{
		{"--private-key-file", b.privateKeyFile, &b.o.Auth.PrivateKey},
		{"--known-hosts-file", b.knownHostsFile, &b.o.Auth.KnownHosts},
	} {
		if f.path == "" {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.into = data
	}
	if strings.HasPrefix(b.o.URL, "ssh://") {
		// The key authenticates; the user is the URL's.
		b.o.Auth.Username = ""
	}
	if b.caFile != "" {
		ca, err := os.ReadFile(b.caFile)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		b.o.Auth.CA = ca
	}
	return b.o.Validate()
}

// installFlags are the flags of `plumb install` that choose what is
// installed, shared by bootstrap.
func installFlags(f *pflag.FlagSet, o *install.Options) {
	f.StringSliceVar(&o.Components, "components", o.Components, "The controllers to install: "+strings.Join(install.Controllers, ", ")+".")
	f.StringSliceVar(&o.ComponentsExtra, "components-extra", nil, "Extras to install as well: "+strings.Join(install.Extras, ", ")+".")
	f.StringVar(&o.Registry, "registry", o.Registry, "The registry and path of Plumb's images (<registry>/<program>:<version>); another than the default serves NATS's image too (<registry>/nats:<tag>), for an air-gapped install.")
	f.StringVar(&o.Version, "version", o.Version, "The tag of Plumb's images; defaults to this plumb's version (latest for a development build).")
	f.BoolVar(&o.NetworkPolicy, "network-policy", o.NetworkPolicy, "Install the NetworkPolicies that fence "+install.Namespace+" in (they need a CNI that enforces them).")
	f.BoolVar(&o.WatchAllNamespaces, "watch-all-namespaces", o.WatchAllNamespaces, "Have the controllers reconcile objects in every namespace; false keeps them to "+install.Namespace+".")
	f.StringSliceVar(&o.AllowedPrivateNetworks, "allowed-private-networks", nil, "Private networks (CIDRs or single addresses, comma-separated) of the Git servers and registries source- and image-controller may reach, passed to them as their flag of that name; none by default (bootstrap writes it as a patch of "+bootstrap.Name+"/kustomization.yaml).")
	f.StringSliceVar(&o.APIServerEndpoints, apiServerEndpointsFlag, nil, "The API server's addresses and ports (IP:port, comma-separated): the egress NetworkPolicies let render-controller (and the UI) reach them too (deploy/README.md, \"Network policies\"). Without the flag they are read from the EndpointSlice "+install.APIServerSlice.String()+" (not with --export); an empty value adds none.")
	f.StringSliceVar(&o.ClusterDNS, "cluster-dns", nil, "Addresses of DNS servers the Pods ask that are not kube-system's kube-dns Pods (NodeLocal DNSCache's 169.254.20.10, a DNS on the node): the egress NetworkPolicies let port 53 through to them too.")
}

// bootstrapGit runs the steps of `plumb bootstrap git` in order: Git
// first, so a cluster is never installed from manifests Git lacks.
func (g *globals) bootstrapGit(ctx context.Context, o bootstrap.Options) error {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return err
	}
	served, err := install.ServesAdmissionPolicy(dc)
	if err != nil {
		return fmt.Errorf("asking the API server which admission APIs it serves: %w", err)
	}
	o.Install.AdmissionPolicy = served

	fmt.Fprintf(g.out, "► cloning %s, branch %s\n", o.URL, o.Branch)
	files, err := bootstrap.Files(o)
	if err != nil {
		return err
	}
	commit, err := bootstrap.Push(ctx, o, files, nil)
	if err != nil {
		return err
	}
	if len(commit.KnownHosts) > 0 && len(o.Auth.KnownHosts) == 0 {
		fmt.Fprintf(g.out, "◎ trusting the SSH host key %s the host showed (pin it with --known-hosts-file)\n", bootstrap.Fingerprint(commit.KnownHosts))
		o.Auth.KnownHosts = commit.KnownHosts
	}
	if commit.Changed {
		fmt.Fprintf(g.out, "✔ committed and pushed %s\n", commit.Hash)
	} else {
		fmt.Fprintf(g.out, "◎ %s/%s is up to date at %s: nothing committed\n", o.Path, bootstrap.Name, commit.Hash)
	}

	fmt.Fprintf(g.out, "► installing Plumb %s in %s\n", o.Install.Version, install.Namespace)
	objs, err := install.Render(o.Install)
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, g.client, objs, g.out); err != nil {
		return err
	}
	if err := install.WaitReady(ctx, g.client, objs, g.out); err != nil {
		return err
	}

	fmt.Fprintln(g.out, "► configuring the sync from Git")
	for _, u := range bootstrap.ClusterObjects(o) {
		if err := g.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(install.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		fmt.Fprintf(g.out, "✔ %s/%s/%s applied\n", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	revision := commit.Revision(o.Branch)
	if err := g.waitApplied(ctx, types.NamespacedName{Namespace: install.Namespace, Name: bootstrap.Name}, revision); err != nil {
		return err
	}
	fmt.Fprintf(g.out, "✔ bootstrap finished: Plumb syncs %s from %s\n", revision, o.URL)
	return nil
}

// waitApplied waits until the Kustomization is Ready having applied
// revision, printing its Ready message when it changes.
func (g *globals) waitApplied(ctx context.Context, key types.NamespacedName, revision string) error {
	fmt.Fprintf(g.out, "◎ waiting for Kustomization/%s to apply %s\n", key, revision)
	last := ""
	for {
		ks := &kustomizev1.Kustomization{}
		err := g.client.Get(ctx, key, ks)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("reading Kustomization %s: %w", key, err)
		}
		if err == nil {
			ready := conditions.Get(ks, meta.ReadyCondition)
			if ready != nil && ready.Message != last {
				fmt.Fprintf(g.out, "◎ %s: %s\n", ready.Reason, ready.Message)
				last = ready.Message
			}
			if ks.Status.LastAppliedRevision == revision && conditions.IsReady(ks) && ks.Status.ObservedGeneration == ks.Generation {
				fmt.Fprintf(g.out, "✔ Kustomization/%s applied %s\n", key, revision)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Kustomization %s has not applied %s (plumb get kustomization -n %s %s): %w", key, revision, key.Namespace, key.Name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
