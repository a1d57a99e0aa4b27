package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"

	"plumb.dev/cli/internal/install"
	"plumb.dev/pkg/version"
)

// installVersion is the image tag `plumb install` defaults to: this
// plumb's own release, or latest for a build that is not one.
func installVersion() string {
	v := version.Get().Version
	if v == "" || v == "dev" {
		return "latest"
	}
	return v
}

func newInstallCmd(g *globals) *cobra.Command {
	o := install.DefaultOptions(installVersion())
	var export bool
	c := &cobra.Command{
		Use:   "install",
		Short: "Install Plumb on the cluster, or print its manifests with --export",
		Long: "install renders deploy/, as carried in this plumb, for the flags: the controllers of\n" +
			"--components, the extras of --components-extra, images from --registry tagged --version,\n" +
			"the NetworkPolicies unless --network-policy=false, and --watch-all-namespaces=false to\n" +
			"have the controllers reconcile only " + install.Namespace + ". The NetworkPolicies' egress is opened to\n" +
			"the API server's endpoints, which --api-server-endpoints names or else the EndpointSlice\n" +
			install.APIServerSlice.String() + " does. It applies the result server-side\n" +
			"(field manager " + install.FieldManager + "): the namespace and the CRDs first, waiting until the CRDs are\n" +
			"established; then creates the Secret " + install.NATSCredentials + " with a random password per NATS user\n" +
			"unless it exists (a second install never rotates them); then the rest; and waits\n" +
			"until every controller's Deployment is rolled out. Run it again to upgrade.\n\n" +
			"With --export it prints the manifests instead and touches no cluster (the Secret is\n" +
			"not among them: create it with deploy/nats/credentials.sh).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if export {
				objs, err := install.Render(o)
				if err != nil {
					return err
				}
				data, err := install.YAML(objs)
				if err != nil {
					return err
				}
				_, err = g.out.Write(data)
				return err
			}
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
			if err != nil {
				return err
			}
			served, err := install.ServesAdmissionPolicy(dc)
			if err != nil {
				return fmt.Errorf("asking the API server which admission APIs it serves: %w", err)
			}
			if !served {
				o.AdmissionPolicy = false
				fmt.Fprintf(g.out, "◎ MutatingAdmissionPolicy is not served (Kubernetes < %s): sync-controller's finalizer policy is left out\n",
					strings.TrimSuffix(install.AdmissionPolicyKubernetes, ".0"))
			}
			g.findAPIServerEndpoints(ctx, cmd, &o)
			objs, err := install.Render(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.out, "► installing Plumb %s (%s) in %s on %s\n", o.Version, strings.Join(append(append([]string{}, o.Components...), o.ComponentsExtra...), ", "), install.Namespace, g.cfg.Host)
			if err := install.Apply(ctx, g.client, objs, g.out); err != nil {
				return err
			}
			if err := install.WaitReady(ctx, g.client, objs, g.out); err != nil {
				return err
			}
			fmt.Fprintln(g.out, "✔ install finished")
			return nil
		},
	}
	f := c.Flags()
	installFlags(f, &o)
	f.BoolVar(&export, "export", false, "Print the manifests (multi-document YAML) instead of installing them.")
	return c
}

// apiServerEndpointsFlag names the API server's endpoints for the egress
// policies; without it install and bootstrap read them from the cluster.
const apiServerEndpointsFlag = "api-server-endpoints"

// findAPIServerEndpoints sets o.APIServerEndpoints to the endpoints the
// API server publishes in the kubernetes EndpointSlice, when the
// NetworkPolicies are installed and --api-server-endpoints was not given
// (given, even empty, it is the operator's word). The egress policies
// then name the API server exactly, wherever it is: deploy/'s own rule
// guesses a private address on 443 or 6443. A port off those is warned
// about, since only that one rule then lets render-controller reach the
// API server, and an endpoint that moves leaves it behind. A slice that
// cannot be read is warned about too and the install goes on with
// deploy/'s rules, as it did before it read the slice.
func (g *globals) findAPIServerEndpoints(ctx context.Context, cmd *cobra.Command, o *install.Options) {
	if !o.NetworkPolicy || cmd.Flags().Changed(apiServerEndpointsFlag) {
		return
	}
	eps, err := install.ReadAPIServerEndpoints(ctx, g.client)
	if err != nil {
		fmt.Fprintf(g.errOut, "◎ warning: %v; the egress policies keep deploy/'s rule for the API server alone (a private address on 443 or 6443): name it with --%s\n", err, apiServerEndpointsFlag)
		return
	}
	o.APIServerEndpoints = eps
	fmt.Fprintf(g.out, "◎ the API server is at %s (EndpointSlice %s): the egress policies let render-controller and the UI reach it\n", strings.Join(eps, ", "), install.APIServerSlice)
	if off := install.OffPolicyPorts(eps); len(off) > 0 {
		fmt.Fprintf(g.errOut, "◎ warning: the API server's port at %s is neither 443 nor 6443: only the rule for that address and port lets render-controller reach it; if it changes, run this again or pass --%s\n", strings.Join(off, ", "), apiServerEndpointsFlag)
	}
}

func newUninstallCmd(g *globals) *cobra.Command {
	var o install.UninstallOptions
	c := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove Plumb's controllers, CRDs and objects, leaving what they applied running",
		Long: "uninstall removes Plumb in the order that leaves every workload it applied running:\n" +
			"  1. the controllers' Deployments in " + install.Namespace + ", waiting until their pods are gone (so none\n" +
			"     can prune), sync-controller's MutatingAdmissionPolicy, then the rest of the install\n" +
			"     there and its ClusterRoles and ClusterRoleBindings;\n" +
			"  2. the finalizers of every object of Plumb's kinds, in every namespace;\n" +
			"  3. Plumb's CRDs, which deletes those objects and nothing they applied;\n" +
			"  4. the namespace " + install.Namespace + ", unless --keep-namespace (the Secret " + install.NATSCredentials + "\n" +
			"     and NATS's volume then stay for a later install).\n" +
			"--dry-run prints what would be deleted (server-side dry runs) and changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			return install.Uninstall(ctx, g.client, o, g.out)
		},
	}
	f := c.Flags()
	f.BoolVar(&o.KeepNamespace, "keep-namespace", false, "Leave the namespace "+install.Namespace+" (and the NATS credentials in it).")
	f.BoolVar(&o.DryRun, "dry-run", false, "Print what would be deleted; change nothing.")
	return c
}
