package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"

	"plumb.dev/cli/internal/install"
)

// controllers are the Deployments of deploy/.
var controllers = []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller"}

// crdName is the name of the CustomResourceDefinition of k
// ("kustomizations.kustomize.plumb.dev").
func crdName(k *kind) string { return k.def.Resource + "." + k.def.Group() }

func newCheckCmd(g *globals) *cobra.Command {
	var (
		ctrlNS  string
		natsURL string
		pre     bool
	)
	c := &cobra.Command{
		Use:   "check",
		Short: "Check that Plumb is installed and running: API server, CRDs, controllers, NATS",
		Long: "check prints one line per check, ✔ or ✗:\n" +
			"  - the API server and its Kubernetes version;\n" +
			"  - Plumb's CRDs: installed, established, and serving the version this plumb speaks;\n" +
			"  - the controllers' Deployments in --controller-namespace: every replica updated\n" +
			"    and available, at the current generation;\n" +
			"  - NATS: the server the controllers use (the --nats-url of their Deployments, or\n" +
			"    --nats-url, or $" + natsURLEnv + ") answers as a NATS server, from this machine.\n\n" +
			"With --pre it checks instead what `plumb install` needs: Kubernetes " + strings.TrimSuffix(install.MinKubernetes, ".0") + " or later,\n" +
			"and the rights (SelfSubjectAccessReviews) to create and patch every kind the install\n" +
			"applies where it applies it.\n\n" +
			"Exit code: 0 everything is there, 1 something is missing or not ready, 2 the\n" +
			"API server cannot be reached.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			if pre {
				return preCheck(ctx, g)
			}
			ck := &checker{g: g}
			if err := ck.apiServer(); err != nil {
				return err
			}
			ck.crds(ctx)
			ck.controllers(ctx, ctrlNS)
			if !cmd.Flags().Changed("nats-url") {
				natsURL = os.Getenv(natsURLEnv)
			}
			ck.nats(ctx, ctrlNS, natsURL)
			if ck.failed > 0 {
				return negative(fmt.Errorf("%d check(s) failed", ck.failed))
			}
			fmt.Fprintln(g.out, "✔ all checks passed")
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&ctrlNS, "controller-namespace", controllerNamespace, "Where the controllers' Deployments are.")
	f.BoolVar(&pre, "pre", false, "Check what `plumb install` needs (Kubernetes version, rights) instead of the installed Plumb.")
	f.StringVar(&natsURL, "nats-url", "", "The NATS server to check; defaults to $"+natsURLEnv+", then the controllers' own (their Deployments' --nats-url).")
	return c
}

// preCheck is `check --pre`: what installing deploy/ as `plumb install`
// renders it by default needs of the cluster and of the caller.
func preCheck(ctx context.Context, g *globals) error {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		fmt.Fprintf(g.out, "✗ the API server at %s: %v\n", g.cfg.Host, err)
		return fmt.Errorf("the API server at %s cannot be reached: %w", g.cfg.Host, err)
	}
	objs, err := install.Render(install.DefaultOptions(installVersion()))
	if err != nil {
		return err
	}
	failed, err := install.Precheck(ctx, g.client, dc, objs, g.out)
	if err != nil {
		return err
	}
	if failed > 0 {
		return negative(fmt.Errorf("%d check(s) failed", failed))
	}
	fmt.Fprintln(g.out, "✔ prerequisites checks passed")
	return nil
}

// checker prints the checks and counts the failures.
type checker struct {
	g      *globals
	failed int
}

func (c *checker) ok(format string, args ...any) {
	fmt.Fprintf(c.g.out, "✔ "+format+"\n", args...)
}

func (c *checker) fail(format string, args ...any) {
	c.failed++
	fmt.Fprintf(c.g.out, "✗ "+format+"\n", args...)
}

func (c *checker) section(title string) { fmt.Fprintf(c.g.out, "► %s\n", title) }

// apiServer prints the Kubernetes version; an unreachable API server ends
// the command (nothing else can be checked).
func (c *checker) apiServer() error {
	c.section("checking the API server")
	dc, err := discovery.NewDiscoveryClientForConfig(c.g.cfg)
	if err != nil {
		return err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		fmt.Fprintf(c.g.out, "✗ the API server at %s: %v\n", c.g.cfg.Host, err)
		return fmt.Errorf("the API server at %s cannot be reached: %w", c.g.cfg.Host, err)
	}
	c.ok("Kubernetes %s at %s", v.GitVersion, c.g.cfg.Host)
	return nil
}

// crds checks each CRD: present, Established, serving the version plumb
// speaks.
func (c *checker) crds(ctx context.Context) {
	c.section("checking the CRDs")
	// Every kind of the table: a kind added to pkg/kinds is checked
	// without a line here.
	for _, k := range allKinds {
		want := struct{ name, version string }{crdName(k), k.def.GVK.Version}
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		err := c.g.client.Get(ctx, types.NamespacedName{Name: want.name}, crd)
		if apierrors.IsNotFound(err) {
			c.fail("%s: not installed (kubectl apply -k deploy/crds)", want.name)
			continue
		}
		if err != nil {
			c.fail("%s: %v", want.name, err)
			continue
		}
		served, storage := crdVersions(crd)
		established := crdCondition(crd, "Established")
		switch {
		case established != "True":
			c.fail("%s: not established (Established=%s)", want.name, orUnknownStatus(established))
		case !slices.Contains(served, want.version):
			c.fail("%s: serves %s, not %s, which this plumb speaks", want.name, strings.Join(served, ", "), want.version)
		default:
			c.ok("%s: %s (stored as %s)", want.name, strings.Join(served, ", "), storage)
		}
	}
}

func crdVersions(crd *unstructured.Unstructured) (served []string, storage string) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if s, _ := m["served"].(bool); s {
			served = append(served, name)
		}
		if s, _ := m["storage"].(bool); s {
			storage = name
		}
	}
	return served, storage
}

func crdCondition(crd *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, cd := range conds {
		if m, ok := cd.(map[string]any); ok && m["type"] == condType {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func orUnknownStatus(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// controllers checks each controller's Deployment: rolled out at its
// current generation, every replica updated and available.
func (c *checker) controllers(ctx context.Context, ns string) {
	c.section("checking the controllers in " + ns)
	for _, name := range controllers {
		dep := &appsv1.Deployment{}
		err := c.g.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep)
		if apierrors.IsNotFound(err) {
			c.fail("%s: no Deployment %s/%s", name, ns, name)
			continue
		}
		if err != nil {
			c.fail("%s: %v", name, err)
			continue
		}
		ready, why := install.DeploymentReady(dep)
		images := deploymentImages(dep)
		if ready {
			c.ok("%s: %s (%s)", name, why, images)
		} else {
			c.fail("%s: %s (%s)", name, why, images)
		}
	}
}

func deploymentImages(dep *appsv1.Deployment) string {
	var images []string
	for _, ct := range dep.Spec.Template.Spec.Containers {
		images = append(images, ct.Image)
	}
	return strings.Join(images, ", ")
}

// nats checks that the NATS server answers with its INFO greeting: the
// given address, else the controllers'.
func (c *checker) nats(ctx context.Context, ns, natsURL string) {
	c.section("checking NATS")
	src := natsSource{url: natsURL, from: "--nats-url"}
	if natsURL == "" {
		var err error
		if src, err = c.g.discoverNATS(ctx, ns); err != nil {
			c.fail("NATS: %v", err)
			return
		}
	}
	if err := src.reachable(ctx); err != nil {
		c.fail("%v", err)
		return
	}
	info, err := natsInfo(ctx, src.url)
	if err != nil {
		c.fail("NATS at %s (%s): %v", src.url, src.from, err)
		return
	}
	if !info.JetStream {
		c.fail("NATS at %s (%s): nats-server %s without JetStream, which the event stream needs", src.url, src.from, info.Version)
		return
	}
	c.ok("NATS at %s (%s): nats-server %s, JetStream enabled", src.url, src.from, info.Version)
}

// serverInfo is the part of a NATS server's INFO greeting check reads.
type serverInfo struct {
	Version   string `json:"version"`
	JetStream bool   `json:"jetstream"`
}

// natsInfo reads the INFO line a NATS server sends to every new client,
// before any TLS or authentication, from the first server of url.
func natsInfo(ctx context.Context, rawURL string) (serverInfo, error) {
	first, _, _ := strings.Cut(rawURL, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil {
		return serverInfo{}, err
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	dctx, cancel := context.WithTimeout(ctx, natsDialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return serverInfo{}, err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(natsDialTimeout))
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadString('\n')
	if err != nil {
		return serverInfo{}, fmt.Errorf("no INFO greeting (not a NATS server, or one that wants TLS first): %w", err)
	}
	payload, ok := strings.CutPrefix(strings.TrimSpace(line), "INFO ")
	if !ok {
		return serverInfo{}, fmt.Errorf("not a NATS server: it greeted with %.40q", line)
	}
	var info serverInfo
	if err := json.Unmarshal([]byte(payload), &info); err != nil {
		return serverInfo{}, fmt.Errorf("an INFO greeting that is not JSON: %w", err)
	}
	return info, nil
}
