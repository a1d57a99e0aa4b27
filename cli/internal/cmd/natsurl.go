package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/inspect"
)

// controllerNamespace is where deploy/ installs the controllers.
const controllerNamespace = "plumb-system"

// natsDeployments are the controllers whose --nats-url names the NATS
// server of the event stream, in the order they are asked.
var natsDeployments = []string{"sync-controller", "notification-controller", "render-controller", "source-controller", "image-controller"}

// natsSource is a NATS address found in the cluster and where it was found.
type natsSource struct {
	url  string
	from string // "the --nats-url of Deployment plumb-system/sync-controller"
}

// errNoNATSURL: no controller Deployment names a NATS server.
var errNoNATSURL = errors.New("no controller Deployment has a --nats-url")

// discoverNATS reads the NATS address the controllers use from their
// Deployments in ns: the first container argument --nats-url of
// sync-controller (else notification-controller, render-controller,
// source-controller), with $(VAR) references expanded from the container's
// environment as the kubelet expands them (env values, ConfigMap and Secret
// keys: deploy/ takes it from the ConfigMap plumb-config).
func (g *globals) discoverNATS(ctx context.Context, ns string) (natsSource, error) {
	var problems []string
	for _, name := range natsDeployments {
		dep := &appsv1.Deployment{}
		if err := g.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return natsSource{}, fmt.Errorf("reading Deployment %s/%s for its --nats-url: %w", ns, name, err)
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			raw, ok := flagValue(append(append([]string{}, c.Command...), c.Args...), "nats-url")
			if !ok {
				continue
			}
			from := fmt.Sprintf("the --nats-url of Deployment %s/%s", ns, name)
			val, err := g.expandEnv(ctx, ns, c, raw)
			if err != nil {
				return natsSource{}, fmt.Errorf("%s (%s): %w", from, raw, err)
			}
			if val == "" {
				problems = append(problems, from+" is empty (publishing is off)")
				continue
			}
			return natsSource{url: val, from: from}, nil
		}
	}
	if len(problems) > 0 {
		return natsSource{}, fmt.Errorf("%w in %s: %s", errNoNATSURL, ns, strings.Join(problems, "; "))
	}
	return natsSource{}, fmt.Errorf("%w in %s", errNoNATSURL, ns)
}

// flagValue finds --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, prefix := range []string{"--", "-"} {
			if v, ok := strings.CutPrefix(a, prefix+name+"="); ok {
				return v, true
			}
			if a == prefix+name && i+1 < len(args) {
				return args[i+1], true
			}
		}
	}
	return "", false
}

// expandEnv expands $(VAR) in s from c's env as the kubelet does: $$ is a
// literal $, and a reference to an unknown variable stays as written.
func (g *globals) expandEnv(ctx context.Context, ns string, c corev1.Container, s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+end]
			v, ok, err := g.envValue(ctx, ns, c, name)
			if err != nil {
				return "", err
			}
			if !ok {
				v = s[i : i+end+1]
			}
			b.WriteString(v)
			i += end
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// envValue is the value of c's environment variable name: its value, or
// the ConfigMap or Secret key it refers to.
func (g *globals) envValue(ctx context.Context, ns string, c corev1.Container, name string) (string, bool, error) {
	for i := len(c.Env) - 1; i >= 0; i-- { // a later entry wins
		e := c.Env[i]
		if e.Name != name {
			continue
		}
		switch from := e.ValueFrom; {
		case from == nil:
			return e.Value, true, nil
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			cm := &corev1.ConfigMap{}
			if err := g.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, cm); err != nil {
				return "", false, fmt.Errorf("$(%s) comes from ConfigMap %s/%s: %w", name, ns, ref.Name, err)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				return "", false, fmt.Errorf("$(%s) comes from ConfigMap %s/%s, which has no key %q", name, ns, ref.Name, ref.Key)
			}
			return v, true, nil
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			s := &corev1.Secret{}
			if err := g.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, s); err != nil {
				return "", false, fmt.Errorf("$(%s) comes from Secret %s/%s: %w", name, ns, ref.Name, err)
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				return "", false, fmt.Errorf("$(%s) comes from Secret %s/%s, which has no key %q", name, ns, ref.Name, ref.Key)
			}
			return string(v), true, nil
		default:
			return "", false, fmt.Errorf("$(%s) comes from a field of the Pod, which only the kubelet knows", name)
		}
	}
	return "", false, nil
}

// natsDialTimeout bounds the reachability check of a discovered address.
const natsDialTimeout = 3 * time.Second

// reachable dials the first server of a NATS URL list; the error says how
// to reach an in-cluster address from a workstation.
func (src natsSource) reachable(ctx context.Context) error {
	first, _, _ := strings.Cut(src.url, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil || u.Host == "" {
		return fmt.Errorf("NATS address %q (%s) is not a URL", src.url, src.from)
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	dctx, cancel := context.WithTimeout(ctx, natsDialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err == nil {
		conn.Close()
		return nil
	}
	msg := fmt.Sprintf("NATS at %s (%s) is not reachable from here: %v", src.url, src.from, err)
	if svc, ns, ok := serviceOf(u.Hostname()); ok {
		msg += fmt.Sprintf("; it is an in-cluster address: forward it with\n    kubectl -n %s port-forward svc/%s %s:%s\n  and give plumb --nats-url %s://127.0.0.1:%s (or set $%s)", ns, svc, port, port, u.Scheme, port, natsURLEnv)
	} else {
		msg += "; give plumb an address this machine reaches with --nats-url (or $" + natsURLEnv + ")"
	}
	return errors.New(msg)
}

// serviceOf splits an in-cluster Service host name: <svc>.<ns>, or
// <svc>.<ns>.svc[.cluster.local].
func serviceOf(host string) (svc, ns string, ok bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) == 2 && net.ParseIP(host) == nil {
		return parts[0], parts[1], true
	}
	return inspect.InClusterService(host)
}
