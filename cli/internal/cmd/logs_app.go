package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/podlogs"
)

// appLogs prints the logs of the Pods of an application's objects and of
// its hooks (Argo CD's `argocd app logs`), each line prefixed with its
// Pod and container as `kubectl logs --prefix` does.
func (g *globals) appLogs(ctx context.Context, o logOptions) error {
	if o.kind != "" || o.name != "" || o.level != "" || o.logDir != "" {
		return errors.New("--kustomization and --helmrelease print Pods' logs: --kind, --name, --level and --log-dir filter the controllers' logs and do not apply")
	}
	if o.kustomization != "" && o.helmRelease != "" {
		return errors.New("give --kustomization or --helmrelease, not both")
	}
	if o.tail < -1 {
		return fmt.Errorf("--tail %d: want a count, or -1 for every line", o.tail)
	}
	if err := g.kube(); err != nil {
		return err
	}
	ns := g.namespaceFlag()
	if ns == "" {
		ns = g.ns
	}
	kind, name := kustomizev1.KustomizationKind, o.kustomization
	var owner client.Object = &kustomizev1.Kustomization{}
	if o.helmRelease != "" {
		kind, name, owner = helmv2.HelmReleaseKind, o.helmRelease, &helmv2.HelmRelease{}
	}
	if err := g.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, owner); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	pods, more, err := podlogs.Of(ctx, g.client, owner, o.hooksOnly)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		what := "objects or hooks"
		if o.hooksOnly {
			what = "hooks"
		}
		fmt.Fprintf(g.errOut, "%s %s/%s: no Pods of its %s\n", kind, ns, name, what)
		return nil
	}
	if more > 0 {
		fmt.Fprintf(g.errOut, "%d more Pods not shown (at most %d, %d per object)\n", more, podlogs.MaxPods, podlogs.MaxPodsPerObject)
	}
	cs, err := kubernetes.NewForConfig(g.cfg)
	if err != nil {
		return err
	}
	return printPodLogs(ctx, g.out, g.errOut, cs, pods, o)
}

// printPodLogs prints each container's log (init containers first), the
// last o.tail lines of it (podlogs.DefaultTail unless given), within
// podlogs' bounds, prefixed "[pod/NAME/CONTAINER] ". With o.follow every
// container is streamed at once until ctx ends. A log that cannot be read
// is reported and the others are still printed; the error counts only
// when none could be.
func printPodLogs(ctx context.Context, out, errOut io.Writer, cs kubernetes.Interface, pods []corev1.Pod, o logOptions) error {
	req := podlogs.Request{Follow: o.follow, SinceSeconds: int64(o.since.Seconds())}
	switch {
	case o.tail >= 0:
		req.Tail = ptrInt64(int64(o.tail))
	case o.tailSet: // --tail -1: every line
		req.Tail = ptrInt64(-1)
	}
	if o.since > 0 {
		req.SinceSeconds++
	}
	type stream struct {
		pod       corev1.Pod
		container string
	}
	var streams []stream
	for _, p := range pods {
		for _, c := range podlogs.Containers(&p) {
			if o.containerSet && c != o.container {
				continue
			}
			streams = append(streams, stream{p, c})
		}
	}
	var mu sync.Mutex
	var failed []error
	read := func(s stream) {
		r := req
		r.Container = s.container
		prefix := fmt.Sprintf("[pod/%s/%s] ", s.pod.Name, s.container)
		rc, err := cs.CoreV1().Pods(s.pod.Namespace).GetLogs(s.pod.Name, r.Options()).Stream(ctx)
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, fmt.Errorf("reading the log of pod %s/%s container %s: %w", s.pod.Namespace, s.pod.Name, s.container, err))
			fmt.Fprintf(errOut, "%s%v\n", prefix, failed[len(failed)-1])
			return
		}
		defer rc.Close()
		_ = podlogs.Lines(rc, func(l string) bool {
			if o.follow {
				// Streams run at once: a line is written whole.
				mu.Lock()
				defer mu.Unlock()
			}
			fmt.Fprintln(out, prefix+l)
			return true
		})
	}
	if o.follow {
		var wg sync.WaitGroup
		for _, s := range streams {
			wg.Add(1)
			go func() { defer wg.Done(); read(s) }()
		}
		wg.Wait()
	} else {
		// One container after the other: its lines stay together.
		for _, s := range streams {
			read(s)
		}
	}
	if len(streams) > 0 && len(failed) == len(streams) {
		return fmt.Errorf("reading the logs: %w", errors.Join(failed...))
	}
	return nil
}

func ptrInt64(n int64) *int64 { return &n }
