package deploytest

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// This file evaluates the NetworkPolicies of deploy/ the way a CNI that
// enforces them would, against the pods the rendered Deployments and
// StatefulSets make (their template labels and container ports) and a few
// strangers, and checks who may connect to what. A policy whose selector
// misses its pods, or a named port no container has, shows up here as a
// connection allowed or refused against the table.

// endpoint is one side of a connection: a pod (its namespace's labels and
// its own), or an address outside the cluster.
type endpoint struct {
	name      string
	namespace string
	nsLabels  map[string]string
	labels    map[string]string
	ports     []corev1.ContainerPort
	ip        netip.Addr // outside the cluster only
}

func (e endpoint) isPod() bool { return e.namespace != "" }

// workloads returns a pod of each Deployment and StatefulSet in objs.
func workloads(t *testing.T, objs []*unstructured.Unstructured) map[string]endpoint {
	t.Helper()
	nsLabels := map[string]string{"kubernetes.io/metadata.name": namespace}
	if ns := find(objs, "Namespace", namespace); ns != nil {
		for k, v := range ns.GetLabels() {
			nsLabels[k] = v
		}
	}
	out := map[string]endpoint{}
	add := func(name string, tmpl corev1.PodTemplateSpec) {
		var ports []corev1.ContainerPort
		for _, c := range tmpl.Spec.Containers {
			ports = append(ports, c.Ports...)
		}
		out[name] = endpoint{name: name, namespace: namespace, nsLabels: nsLabels, labels: tmpl.Labels, ports: ports}
	}
	for _, u := range ofKind(objs, "Deployment") {
		add(u.GetName(), typed[appsv1.Deployment](t, u).Spec.Template)
	}
	for _, u := range ofKind(objs, "StatefulSet") {
		add(u.GetName(), typed[appsv1.StatefulSet](t, u).Spec.Template)
	}
	return out
}

// matches reports whether sel selects labels; a nil selector selects
// nothing, an empty one everything, as in a NetworkPolicyPeer.
func matches(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(l))
}

// peerMatches reports whether peer, in a policy of namespace ns, covers e.
func peerMatches(t *testing.T, ns string, peer networkingv1.NetworkPolicyPeer, e endpoint) bool {
	if peer.IPBlock != nil {
		if e.isPod() {
			return false // pod addresses are not what these blocks name
		}
		cidr := netip.MustParsePrefix(peer.IPBlock.CIDR)
		if !cidr.Contains(e.ip) {
			return false
		}
		for _, ex := range peer.IPBlock.Except {
			if netip.MustParsePrefix(ex).Contains(e.ip) {
				return false
			}
		}
		return true
	}
	if !e.isPod() {
		return false
	}
	if peer.NamespaceSelector == nil {
		if e.namespace != ns {
			return false
		}
	} else if !matches(t, peer.NamespaceSelector, e.nsLabels) {
		return false
	}
	return peer.PodSelector == nil || matches(t, peer.PodSelector, e.labels)
}

// portMatches reports whether a rule's ports admit port on the destination
// dst; a named port is looked up among dst's container ports.
func portMatches(ports []networkingv1.NetworkPolicyPort, dst endpoint, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		want := p.Port.IntVal
		if p.Port.Type == intstr.String {
			want = -1
			for _, cp := range dst.ports {
				if cp.Name == p.Port.StrVal {
					want = cp.ContainerPort
				}
			}
		}
		if port == want || (p.EndPort != nil && port >= want && port <= *p.EndPort) {
			return true
		}
	}
	return false
}

func hasType(p networkingv1.NetworkPolicy, typ networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return typ == networkingv1.PolicyTypeIngress || (typ == networkingv1.PolicyTypeEgress && len(p.Spec.Egress) > 0)
	}
	return slices.Contains(p.Spec.PolicyTypes, typ)
}

// reachable reports whether src may open a connection to port of dst under
// policies: dst's ingress and src's egress must both let it through.
func reachable(t *testing.T, policies []networkingv1.NetworkPolicy, src, dst endpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	ingress, egress := !dst.isPod(), !src.isPod()
	isolatedIn, isolatedOut := false, false
	for _, p := range policies {
		if selects(t, p, dst, networkingv1.PolicyTypeIngress) {
			isolatedIn = true
			for _, r := range p.Spec.Ingress {
				ingress = ingress || admits(t, p.Namespace, r.From, r.Ports, src, dst, port, proto)
			}
		}
		if selects(t, p, src, networkingv1.PolicyTypeEgress) {
			isolatedOut = true
			for _, r := range p.Spec.Egress {
				egress = egress || admits(t, p.Namespace, r.To, r.Ports, dst, dst, port, proto)
			}
		}
	}
	return (ingress || !isolatedIn) && (egress || !isolatedOut)
}

// selects reports whether policy p isolates pod e in direction typ.
func selects(t *testing.T, p networkingv1.NetworkPolicy, e endpoint, typ networkingv1.PolicyType) bool {
	return e.isPod() && p.Namespace == e.namespace && matches(t, &p.Spec.PodSelector, e.labels) && hasType(p, typ)
}

// admits reports whether one rule, with its peers (from or to; none means
// everyone) and ports, lets a connection to port of dst through whose
// other end is peer.
func admits(t *testing.T, ns string, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort, peer, dst endpoint, port int32, proto corev1.Protocol) bool {
	ok := len(peers) == 0
	for _, p := range peers {
		ok = ok || peerMatches(t, ns, p, peer)
	}
	return ok && portMatches(ports, dst, port, proto)
}

// policiesOf returns the rendered NetworkPolicies, each checked to select
// at least one of the rendered pods.
func policiesOf(t *testing.T, objs []*unstructured.Unstructured, pods map[string]endpoint) []networkingv1.NetworkPolicy {
	t.Helper()
	var out []networkingv1.NetworkPolicy
	for _, u := range ofKind(objs, "NetworkPolicy") {
		p := *typed[networkingv1.NetworkPolicy](t, u)
		selected := false
		for _, pod := range pods {
			selected = selected || matches(t, &p.Spec.PodSelector, pod.labels)
		}
		if !selected {
			t.Errorf("NetworkPolicy %s selects none of the install's pods", p.Name)
		}
		out = append(out, p)
	}
	return out
}

// TestNetworkPoliciesSelectTheRightPods: each policy names the pods the
// Deployments and the NATS StatefulSet really label, and every named
// port it opens is a port those pods declare.
func TestNetworkPoliciesSelectTheRightPods(t *testing.T) {
	g := NewWithT(t)
	objs := buildBase(t)
	pods := workloads(t, objs)
	g.Expect(pods).To(HaveKey("nats"))
	want := map[string][]string{
		"default-deny-ingress":        {"image-controller", "nats", "notification-controller", "render-controller", "source-controller", "sync-controller"},
		"webhook-receiver":            {"notification-controller"},
		"source-controller-artifacts": {"source-controller"},
		"render-controller-artifacts": {"render-controller"},
		"nats-clients":                {"nats"},
		"metrics":                     {"image-controller", "notification-controller", "render-controller", "source-controller", "sync-controller"},
		"render-controller-egress":    {"render-controller"},
	}
	policies := policiesOf(t, objs, pods)
	got := map[string][]string{}
	for _, p := range policies {
		for name, pod := range pods {
			if matches(t, &p.Spec.PodSelector, pod.labels) {
				got[p.Name] = append(got[p.Name], name)
			}
		}
		slices.Sort(got[p.Name])
		for _, r := range p.Spec.Ingress {
			for _, port := range r.Ports {
				if port.Port == nil || port.Port.Type != intstr.String {
					continue
				}
				for _, name := range got[p.Name] {
					g.Expect(pods[name].ports).To(ContainElement(HaveField("Name", port.Port.StrVal)),
						"policy %s opens port %q, which %s does not declare", p.Name, port.Port.StrVal, name)
				}
			}
		}
	}
	g.Expect(got).To(Equal(want))
}

// TestOnlyPlumbReachesItsArtifactsAndNATS: who may connect to what, over
// every pod of the install and a few strangers.
func TestOnlyPlumbReachesItsArtifactsAndNATS(t *testing.T) {
	objs := buildBase(t)
	pods := workloads(t, objs)
	policies := policiesOf(t, objs, pods)
	tenant := map[string]string{"kubernetes.io/metadata.name": "team-a"}
	strangers := []endpoint{
		{name: "a pod in plumb-system", namespace: namespace, nsLabels: pods["nats"].nsLabels, labels: map[string]string{"app": "debug"}},
		{name: "a tenant's pod", namespace: "team-a", nsLabels: tenant, labels: map[string]string{"app": "web"}},
		// Labels are the tenant's to choose; a policy must not trust a
		// pod's labels without its namespace.
		{name: "a tenant's pod labelled as sync-controller", namespace: "team-a", nsLabels: tenant,
			labels: map[string]string{"app.kubernetes.io/name": "sync-controller", "app.kubernetes.io/part-of": "plumb"}},
		{name: "the internet", ip: netip.MustParseAddr("203.0.113.7")},
		{name: "a node", ip: netip.MustParseAddr("10.0.0.12")},
	}
	everyone := slices.Clone(strangers)
	for _, name := range []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller", "nats"} {
		everyone = append(everyone, pods[name])
	}
	prometheus := endpoint{name: "prometheus", namespace: "monitoring", labels: map[string]string{"app": "prometheus"},
		nsLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring", "plumb.dev/scrape-metrics": "true"}}
	everyone = append(everyone, prometheus)

	tcp := corev1.ProtocolTCP
	for _, tc := range []struct {
		dst  string
		port int32
		from []string // who may connect; everyone else may not
	}{
		{"source-controller", 9090, []string{"render-controller"}},
		{"render-controller", 9090, []string{"sync-controller"}},
		{"nats", 4222, []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller"}},
		{"nats", 8222, nil},
		// Everyone but render-controller, whose egress is fenced in.
		{"notification-controller", 9292, slices.DeleteFunc(names(everyone), func(s string) bool { return s == "render-controller" })},
		{"source-controller", 8080, []string{"prometheus"}},
		{"sync-controller", 8080, []string{"prometheus"}},
		{"sync-controller", 9440, nil},
		{"image-controller", 8080, []string{"prometheus"}},
		{"image-controller", 9440, nil},
	} {
		t.Run(fmt.Sprintf("%s:%d", tc.dst, tc.port), func(t *testing.T) {
			dst, ok := pods[tc.dst]
			if !ok {
				t.Fatalf("no pod %s", tc.dst)
			}
			var got []string
			for _, src := range everyone {
				if src.name != tc.dst && reachable(t, policies, src, dst, tc.port, tcp) {
					got = append(got, src.name)
				}
			}
			want := slices.DeleteFunc(slices.Clone(tc.from), func(s string) bool { return s == tc.dst })
			NewWithT(t).Expect(got).To(ConsistOf(want))
		})
	}
}

// TestRenderControllerReachesOnlyWhatItNeeds: its egress is the API
// server, source-controller's artifacts, NATS and DNS.
func TestRenderControllerReachesOnlyWhatItNeeds(t *testing.T) {
	objs := buildBase(t)
	pods := workloads(t, objs)
	policies := policiesOf(t, objs, pods)
	render := pods["render-controller"]
	dns, apiServer := dnsPod, apiServerAddr
	checkEgress(t, policies, render, []egressCase{
		{apiServer, 6443, corev1.ProtocolTCP, true},
		{apiServer, 443, corev1.ProtocolTCP, true},
		{pods["source-controller"], 9090, corev1.ProtocolTCP, true},
		{pods["nats"], 4222, corev1.ProtocolTCP, true},
		{dns, 53, corev1.ProtocolUDP, true},
		{dns, 53, corev1.ProtocolTCP, true},
		{endpoint{name: "a Git host", ip: netip.MustParseAddr("140.82.121.4")}, 443, corev1.ProtocolTCP, false},
		{endpoint{name: "the cloud metadata address", ip: netip.MustParseAddr("169.254.169.254")}, 80, corev1.ProtocolTCP, false},
		{endpoint{name: "an internal web server", ip: netip.MustParseAddr("10.0.0.7")}, 80, corev1.ProtocolTCP, false},
		{pods["notification-controller"], 9292, corev1.ProtocolTCP, false},
		{pods["source-controller"], 8080, corev1.ProtocolTCP, false},
		{endpoint{name: "a DNS pod elsewhere", namespace: "team-a", nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}, labels: map[string]string{"k8s-app": "kube-dns"}}, 53, corev1.ProtocolUDP, false},
	})
}

// TestUINetworkPoliciesLetItReachOnlyWhatItNeeds: with components/ui, the UI pod's own
// policies are the ones it names, and it may reach the API server (where
// rendered artifacts come from too, through the service proxy), NATS and
// DNS, nothing else: a user's page cannot make it a way into the network.
func TestUINetworkPoliciesLetItReachOnlyWhatItNeeds(t *testing.T) {
	objs, err := build(filepath.Join("testdata", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	pods := workloads(t, objs)
	policies := policiesOf(t, objs, pods)
	ui, ok := pods["ui"]
	if !ok {
		t.Fatal("no ui pod")
	}
	var selecting []string
	for _, p := range policies {
		if matches(t, &p.Spec.PodSelector, ui.labels) {
			selecting = append(selecting, p.Name)
		}
	}
	NewWithT(t).Expect(selecting).To(ConsistOf("default-deny-ingress", "ui", "ui-egress"))

	dns, apiServer := dnsPod, apiServerAddr
	checkEgress(t, policies, ui, []egressCase{
		{apiServer, 6443, corev1.ProtocolTCP, true},
		{apiServer, 443, corev1.ProtocolTCP, true},
		{pods["nats"], 4222, corev1.ProtocolTCP, true},
		{dns, 53, corev1.ProtocolUDP, true},
		{dns, 53, corev1.ProtocolTCP, true},
		{pods["nats"], 8222, corev1.ProtocolTCP, false},
		{pods["render-controller"], 9090, corev1.ProtocolTCP, false},
		{pods["source-controller"], 9090, corev1.ProtocolTCP, false},
		{pods["notification-controller"], 9292, corev1.ProtocolTCP, false},
		{pods["sync-controller"], 8080, corev1.ProtocolTCP, false},
		{endpoint{name: "the internet", ip: netip.MustParseAddr("203.0.113.7")}, 443, corev1.ProtocolTCP, false},
		{endpoint{name: "the cloud metadata address", ip: netip.MustParseAddr("169.254.169.254")}, 80, corev1.ProtocolTCP, false},
		{endpoint{name: "an internal web server", ip: netip.MustParseAddr("10.0.0.7")}, 80, corev1.ProtocolTCP, false},
		{endpoint{name: "a tenant's pod", namespace: "team-a", nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}, labels: map[string]string{"app": "web"}}, 8080, corev1.ProtocolTCP, false},
		{endpoint{name: "a DNS pod elsewhere", namespace: "team-a", nsLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}, labels: map[string]string{"k8s-app": "kube-dns"}}, 53, corev1.ProtocolUDP, false},
	})
}

// The DNS pods and the API server, as an egress policy sees them.
var (
	dnsPod = endpoint{name: "CoreDNS", namespace: "kube-system", nsLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"},
		labels: map[string]string{"k8s-app": "kube-dns"}}
	apiServerAddr = endpoint{name: "the API server", ip: netip.MustParseAddr("10.0.0.1")}
)

// egressCase is one connection a pod opens and whether it goes through.
type egressCase struct {
	dst   endpoint
	port  int32
	proto corev1.Protocol
	ok    bool
}

// checkEgress checks each connection of src against policies.
func checkEgress(t *testing.T, policies []networkingv1.NetworkPolicy, src endpoint, cases []egressCase) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s:%d/%s", tc.dst.name, tc.port, tc.proto), func(t *testing.T) {
			NewWithT(t).Expect(reachable(t, policies, src, tc.dst, tc.port, tc.proto)).To(Equal(tc.ok))
		})
	}
}

func names(es []endpoint) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.name
	}
	return out
}
