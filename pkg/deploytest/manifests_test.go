package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// TestCRDListIsComplete keeps deploy/crds/kustomization.yaml in step with
// what `make manifests` generates: a new CRD file that the list misses would
// silently not be installed.
func TestCRDListIsComplete(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(root, "deploy", "crds")
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var generated []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" {
			generated = append(generated, e.Name())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var k struct {
		Resources []string `json:"resources"`
	}
	g.Expect(yaml.Unmarshal(data, &k)).To(Succeed())
	slices.Sort(k.Resources)
	g.Expect(k.Resources).To(Equal(generated), "deploy/crds/kustomization.yaml must list every generated CRD")
	g.Expect(generated).NotTo(BeEmpty())

	crds := ofKind(buildBase(t), "CustomResourceDefinition")
	g.Expect(crds).To(HaveLen(len(generated)))
}

// TestEveryObjectIsInPlumbSystem: namespaced objects go to plumb-system,
// and the namespace itself is part of the install.
func TestEveryObjectIsInPlumbSystem(t *testing.T) {
	g := NewWithT(t)
	objs := buildBase(t)
	g.Expect(find(objs, "Namespace", namespace)).NotTo(BeNil())
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
			"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
			g.Expect(o.GetNamespace()).To(BeEmpty(), "%s %s", o.GetKind(), o.GetName())
		default:
			g.Expect(o.GetNamespace()).To(Equal(namespace), "%s %s", o.GetKind(), o.GetName())
		}
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/part-of", "plumb"), "%s %s", o.GetKind(), o.GetName())
	}
}

func typed[T any](t *testing.T, obj runtime.Object) *T {
	t.Helper()
	u, ok := obj.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		t.Fatalf("not unstructured: %T", obj)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// TestDeployments checks what the install promises of every controller:
// its own ServiceAccount, probes on the --health-addr port, resource
// requests and limits, the restricted security context, the NATS URL from
// plumb-config, and writable emptyDirs where it writes.
func TestDeployments(t *testing.T) {
	objs := buildBase(t)
	for _, name := range controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			u := find(objs, "Deployment", name)
			g.Expect(u).NotTo(BeNil())
			d := typed[appsv1.Deployment](t, u)
			pod := d.Spec.Template.Spec

			g.Expect(d.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/name", name))
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", name))
			g.Expect(pod.ServiceAccountName).To(Equal(name))
			g.Expect(find(objs, "ServiceAccount", name)).NotTo(BeNil())

			psc := pod.SecurityContext
			g.Expect(psc).NotTo(BeNil())
			g.Expect(psc.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(psc.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))

			g.Expect(pod.Containers).To(HaveLen(1))
			c := pod.Containers[0]
			g.Expect(c.Image).To(HaveSuffix("/" + name + ":latest"))

			sc := c.SecurityContext
			g.Expect(sc).NotTo(BeNil())
			g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
			g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			g.Expect(sc.Capabilities).NotTo(BeNil())
			g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
			g.Expect(sc.Capabilities.Add).To(BeEmpty())
			g.Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
			g.Expect(sc.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))

			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				g.Expect(c.Resources.Requests).To(HaveKey(r))
				g.Expect(c.Resources.Limits).To(HaveKey(r))
			}

			// Probes point at the port --health-addr binds.
			health, ok := flagValue(c.Args, "health-addr")
			g.Expect(ok).To(BeTrue(), "--health-addr")
			port := portByName(c, "healthz")
			g.Expect(port).NotTo(BeNil())
			g.Expect(health).To(Equal(":" + strconv.Itoa(int(port.ContainerPort))))
			for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
				g.Expect(probe).NotTo(BeNil(), path)
				g.Expect(probe.HTTPGet).NotTo(BeNil(), path)
				g.Expect(probe.HTTPGet.Path).To(Equal(path))
				g.Expect(probe.HTTPGet.Port).To(Equal(intstr.FromString("healthz")))
			}
			metrics, _ := flagValue(c.Args, "metrics-addr")
			g.Expect(portByName(c, "http-metrics")).To(HaveValue(HaveField("ContainerPort", portOf(metrics))))

			// The NATS URL comes from plumb-config, one place for all four.
			g.Expect(c.Args).To(ContainElement("--nats-url=$(NATS_URL)"))
			g.Expect(c.Env).To(ContainElement(And(
				HaveField("Name", "NATS_URL"),
				HaveField("ValueFrom.ConfigMapKeyRef.Name", "plumb-config"),
				HaveField("ValueFrom.ConfigMapKeyRef.Key", "nats-url"),
			)))
			g.Expect(c.Args).To(ContainElement("--enable-leader-election"))

			// The root filesystem is read-only: /tmp and the storage path
			// must be emptyDirs.
			writable := []string{"/tmp"}
			if p, ok := flagValue(c.Args, "storage-path"); ok {
				writable = append(writable, p)
			}
			for _, path := range writable {
				var vol string
				for _, m := range c.VolumeMounts {
					if m.MountPath == path && !m.ReadOnly {
						vol = m.Name
					}
				}
				g.Expect(vol).NotTo(BeEmpty(), "no writable mount at %s", path)
				g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", vol), HaveField("EmptyDir", Not(BeNil())))), path)
			}
		})
	}
}

// TestServices: the artifact servers and the receiver have Services whose
// selectors pick the controller's pods and whose target ports are ports the
// controller listens on (the flag's port). Artifact URLs name the Service.
func TestServices(t *testing.T) {
	objs := buildBase(t)
	for _, tc := range []struct {
		service, controller, flag string
	}{
		{"source-controller", "source-controller", "storage-addr"},
		{"render-controller", "render-controller", "storage-addr"},
		{"webhook-receiver", "notification-controller", "receiver-addr"},
	} {
		t.Run(tc.service, func(t *testing.T) {
			g := NewWithT(t)
			su := find(objs, "Service", tc.service)
			g.Expect(su).NotTo(BeNil())
			svc := typed[corev1.Service](t, su)
			d := typed[appsv1.Deployment](t, find(objs, "Deployment", tc.controller))
			for k, v := range svc.Spec.Selector {
				g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
			}
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(svc.Spec.Ports).To(HaveLen(1))
			port := portByName(c, svc.Spec.Ports[0].TargetPort.StrVal)
			g.Expect(port).NotTo(BeNil(), "target port %s", svc.Spec.Ports[0].TargetPort.String())
			addr, ok := flagValue(c.Args, tc.flag)
			g.Expect(ok).To(BeTrue(), "--%s", tc.flag)
			g.Expect(port.ContainerPort).To(Equal(portOf(addr)))
			if tc.flag == "storage-addr" {
				// URLs are http://<adv-addr>/..., so the Service serves port 80.
				g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
				adv, _ := flagValue(c.Args, "storage-adv-addr")
				g.Expect(adv).To(HavePrefix(tc.service + ".$(RUNTIME_NAMESPACE).svc"))
			}
		})
	}
}

func portByName(c corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// portOf returns the port of a ":9090" style address, -1 when it has none.
func portOf(addr string) int32 {
	_, p, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		return -1
	}
	return int32(n)
}
