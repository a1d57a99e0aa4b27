package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/kinds"
)

// Exit codes.
const (
	ExitOK = 0
	// ExitNegative is a definite "no": drift found, or a reconcile that
	// ended with Ready=False.
	ExitNegative = 1
	// ExitError is anything that kept the command from answering.
	ExitError = 2
)

// exitError ends a command with a code other than ExitError.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// negative ends the command with ExitNegative, printing err if not nil.
func negative(err error) error { return &exitError{code: ExitNegative, err: err} }

// Run executes the plumb command line with args and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "✗ %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "✗ %v\n", err)
	return ExitError
}

// globals are the flags every command shares and what they lead to.
type globals struct {
	// kubectl's own connection flags (cli-runtime): --kubeconfig,
	// --context, -n/--namespace, --as, --as-group, --request-timeout and
	// the rest, spelled and read exactly as kubectl does.
	flags   *genericclioptions.ConfigFlags
	timeout time.Duration

	out, errOut io.Writer

	// set by kube()
	cfg    *rest.Config
	client client.WithWatch
	ns     string
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{out: stdout, errOut: stderr, flags: newConfigFlags()}
	root := &cobra.Command{
		Use:   "plumb",
		Short: "Plumb keeps Kubernetes clusters plumb with Git",
		Long: "plumb lists Plumb's objects, asks for reconciles and waits for them, shows drift\n" +
			"between Git (or a rendered Helm chart) and the cluster, a Kustomization's or\n" +
			"HelmRelease's objects with their health, and the event stream. It reads the\n" +
			"kubeconfig the way kubectl does.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	g.flags.AddFlags(pf)
	_ = root.RegisterFlagCompletionFunc("namespace", g.completeNamespaces)
	pf.DurationVar(&g.timeout, "timeout", 5*time.Minute, "How long a command waits (for a reconcile, a download, the API server).")

	root.AddCommand(
		newGetCmd(g),
		newReconcileCmd(g),
		newConfirmPruneCmd(g),
		newConfirmDeleteCmd(g),
		newSyncCmd(g),
		newRollbackCmd(g),
		newSuspendCmd(g, true),
		newSuspendCmd(g, false),
		newDiffCmd(g),
		newBuildCmd(g),
		newCheckCmd(g),
		newLogsCmd(g),
		newTreeCmd(g),
		newEventsCmd(g),
		newTraceCmd(g),
		newStatsCmd(g),
		newExportCmd(g),
		newUICmd(g),
		newPushCmd(g),
		newTagCmd(g),
		newDeleteCmd(g),
		newVersionCmd(g),
		newInstallCmd(g),
		newUninstallCmd(g),
		newBootstrapCmd(g),
		newCreateCmd(g),
		newConvertCmd(g),
	)
	return root
}

// scheme knows the built-in kinds and Plumb's.
var scheme = kinds.NewScheme()

// newConfigFlags returns kubectl's connection flags. plumb keeps no
// discovery cache (it talks to a handful of known kinds), so --cache-dir
// is left out; and it never prompts for a password.
func newConfigFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.CacheDir = nil
	f.Username, f.Password = nil, nil
	return f
}

// clientConfig loads the kubeconfig like kubectl: --kubeconfig, else
// $KUBECONFIG (a list of files), else ~/.kube/config, with --context,
// --namespace, --as and the other connection flags as overrides.
func (g *globals) clientConfig() clientcmd.ClientConfig {
	return g.flags.ToRawKubeConfigLoader()
}

// namespaceFlag is -n/--namespace as given, "" when it was not.
func (g *globals) namespaceFlag() string {
	if g.flags == nil || g.flags.Namespace == nil {
		return ""
	}
	return *g.flags.Namespace
}

// kube connects to the cluster once per command.
func (g *globals) kube() error {
	if g.client != nil {
		return nil
	}
	cc := g.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "plumb"
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	g.cfg, g.client, g.ns = cfg, c, ns
	return nil
}
