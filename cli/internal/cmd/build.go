package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	srcartifact "plumb.dev/pkg/artifact"
	"plumb.dev/pkg/postbuild"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

// renderTimeout is render-controller's --render-timeout default.
const renderTimeout = 2 * time.Minute

// lockDownProcess is render.LockDownProcess; tests, which share one process
// with servers on the default transport, count the calls instead.
var lockDownProcess = render.LockDownProcess

func newBuildCmd(g *globals) *cobra.Command {
	var o localRender
	c := &cobra.Command{
		Use:   "build kustomization NAME --path DIR",
		Short: "Render a local checkout exactly as render-controller would, and print the manifests",
		Long: "build renders the checkout in --path (the root of the repository the\n" +
			"Kustomization's GitRepository fetches) with the Kustomization's spec as the\n" +
			"cluster holds it (path, patches, images, namePrefix, targetNamespace, ...) and\n" +
			"its postBuild variables read from the cluster the way render-controller reads\n" +
			"them. It packs the tree as source-controller would (the GitRepository's\n" +
			"spec.ignore and .sourceignore files), extracts it with the same limits and\n" +
			"builds it with render-controller's package, sandbox and limits, in a render\n" +
			"worker process as render-controller does, so nothing in\n" +
			"the checkout can reach the network. A Kustomization with spec.plugin goes to\n" +
			"its config-management plugin's socket in --plugin-dir, the same exchange as\n" +
			"render-controller's (run the plugin locally on a socket there). It prints the\n" +
			"rendered manifests.\n\n" +
			"Exit code: 0 rendered, 1 the checkout does not render (as render-controller\n" +
			"would report Rendered=False), 2 error.",
		Example:           "  plumb build kustomization apps -n team-a --path .",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind}),
		RunE: g.onKustomization(func(ctx context.Context, ks *kustomizev1.Kustomization) error {
			res, _, err := g.renderLocal(ctx, ks, o)
			var rf *renderFailed
			if errors.As(err, &rf) {
				return negative(err)
			}
			if err != nil {
				return err
			}
			_, err = g.out.Write(res.Manifests)
			return err
		}),
	}
	o.bindFlags(c.Flags())
	_ = c.MarkFlagRequired("path")
	return c
}

// localRender are the flags of a render of a local checkout.
type localRender struct {
	path      string
	strict    bool
	pluginDir string
}

func (o *localRender) bindFlags(f *pflag.FlagSet) {
	f.StringVar(&o.path, "path", "", "The root of the local checkout: the tree the Kustomization's GitRepository holds (spec.path is taken inside it).")
	f.BoolVar(&o.strict, "strict-substitution", false, "As render-controller's flag: a ${var} with no value and no default fails the render instead of becoming empty.")
	f.StringVar(&o.pluginDir, "plugin-dir", "", "As render-controller's flag: the folder of the config-management plugins' sockets, <name>.sock, for a Kustomization with spec.plugin (docs/design/plugins.md).")
}

// renderFailed is a checkout that does not render: render-controller would
// set Rendered=False with its reason.
type renderFailed struct{ err error }

func (e *renderFailed) Error() string {
	return fmt.Sprintf("the checkout does not render (%s): %v", render.Reason(e.err), e.err)
}
func (e *renderFailed) Unwrap() error { return e.err }

// renderLocal renders the checkout in o.path for ks as render-controller
// would render the same tree fetched from Git, and returns the variables
// it used as well. A failure of the render itself is a *renderFailed.
func (g *globals) renderLocal(ctx context.Context, ks *kustomizev1.Kustomization, o localRender) (*render.Result, render.Variables, error) {
	if o.path == "" {
		return nil, nil, errors.New("--path is required: the root of the local checkout")
	}
	if ks.Spec.Plugin != nil && o.pluginDir == "" {
		return nil, nil, errors.New("the Kustomization renders with a config-management plugin (spec.plugin): --plugin-dir names the folder of the plugins' sockets")
	}
	if fi, err := os.Stat(o.path); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("--path %s is not a folder", o.path)
	}
	if fi, err := os.Stat(filepath.Join(o.path, filepath.FromSlash(ks.Spec.Path))); ks.Spec.Path != "" && (err != nil || !fi.IsDir()) {
		return nil, nil, fmt.Errorf("%s has no folder %s (the Kustomization's spec.path): --path is the root of the checkout, and spec.path is taken inside it", o.path, ks.Spec.Path)
	}
	// What render-controller reads from the cluster: the variables, and
	// what source-controller leaves out of the artifact.
	vars, err := postbuild.Variables(ctx, g.client, ks)
	if err != nil {
		return nil, nil, &renderFailed{&render.Error{Reason: kustomizev1.SubstituteFailedReason, Err: err}}
	}
	ignore := g.sourceIgnore(ctx, ks)

	// From here on nothing but the API server's client (whose transport
	// is already built) may reach the network.
	lockDownProcess()
	tmp, err := os.MkdirTemp("", "plumb-build-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	archive := filepath.Join(tmp, "source.tar.gz")
	digest, err := pack(ctx, archive, o.path, ignore)
	if err != nil {
		return nil, nil, fmt.Errorf("packing %s as source-controller would: %w", o.path, err)
	}
	work := filepath.Join(tmp, "work")
	if err := srcartifact.ExtractFile(archive, digest, render.SourceDir(work), srcartifact.Limits{}); err != nil {
		return nil, nil, &renderFailed{&render.Error{Reason: meta.ArtifactFailedReason, Err: fmt.Errorf("render-controller would refuse the source artifact: %w", err)}}
	}
	bctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	// In a render worker, as render-controller renders: its own process
	// with a memory limit, killed at the deadline (pkg/renderworker).
	pool := renderworker.NewPool(renderworker.Options{Workers: 1})
	defer pool.Close()
	var res *render.Result
	if ks.Spec.Plugin != nil {
		// The same exchange with the plugin's socket as render-controller's,
		// in the worker.
		res, err = pool.Plugin(bctx, work, &ks.Spec, renderworker.PluginOptions{SocketDir: o.pluginDir})
	} else {
		res, err = pool.Kustomize(bctx, work, &ks.Spec, renderworker.KustomizeOptions{Vars: vars, StrictSubstitution: o.strict})
	}
	if err != nil {
		return nil, nil, &renderFailed{err}
	}
	return res, vars, nil
}

// sourceIgnore returns spec.ignore of the Kustomization's GitRepository,
// which source-controller applies when it packs the artifact; nil (the
// defaults) with a warning when it cannot be read.
func (g *globals) sourceIgnore(ctx context.Context, ks *kustomizev1.Kustomization) *string {
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	key := types.NamespacedName{Namespace: ns, Name: ks.Spec.SourceRef.Name}
	src := &sourcev1.GitRepository{}
	if err := g.client.Get(ctx, key, src); err != nil {
		what := err.Error()
		if apierrors.IsNotFound(err) {
			what = "not found"
		}
		fmt.Fprintf(g.errOut, "warning: GitRepository %s (spec.sourceRef): %s; packing with the default ignore rules\n", key, what)
		return nil
	}
	return src.Spec.Ignore
}

// pack writes dir as source-controller packs a checkout into archive and
// returns its digest.
func pack(ctx context.Context, archive, dir string, ignore *string) (string, error) {
	f, err := os.Create(archive)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if err := srcartifact.Pack(ctx, io.MultiWriter(f, h), dir, srcartifact.PackOptions{Ignore: srcartifact.NewIgnorer(ignore)}); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
