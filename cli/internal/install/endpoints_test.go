package install

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// apiServerSlice is an EndpointSlice as the API server writes its own:
// one endpoint per replica, the port named https.
func apiServerSlice(addressType discoveryv1.AddressType, port int32, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		AddressType: addressType,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

func endpoint(ready *bool, addresses ...string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: addresses, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

func TestTheAPIServersEndpointsAreItsSlicesReadyAddressesWithItsPortSorted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  []string
	}{
		{"kubeadm", apiServerSlice(discoveryv1.AddressTypeIPv4, 6443, endpoint(nil, "172.18.0.2")), []string{"172.18.0.2:6443"}},
		{
			"three replicas, one not ready, listed out of order",
			apiServerSlice(discoveryv1.AddressTypeIPv4, 443,
				endpoint(ptr.To(true), "10.0.3.9"), endpoint(ptr.To(false), "10.0.1.1"), endpoint(nil, "10.0.2.7")),
			[]string{"10.0.2.7:443", "10.0.3.9:443"},
		},
		{"IPv6", apiServerSlice(discoveryv1.AddressTypeIPv6, 6443, endpoint(nil, "fd00::1")), []string{"[fd00::1]:6443"}},
		{"a relay on a node's bridge", apiServerSlice(discoveryv1.AddressTypeIPv4, 40677, endpoint(nil, "10.244.0.1")), []string{"10.244.0.1:40677"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := APIServerEndpointsOf(tc.slice)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints = %v, want %v", got, tc.want)
			}
			// What is read is what the flag takes.
			o := DefaultOptions("v1.0.0")
			o.APIServerEndpoints = got
			if err := o.Validate(); err != nil {
				t.Errorf("the endpoints read are refused as options: %v", err)
			}
		})
	}
}

func TestAnAPIServerSliceWithNothingToOpenIsAnError(t *testing.T) {
	udp := apiServerSlice(discoveryv1.AddressTypeIPv4, 6443, endpoint(nil, "172.18.0.2"))
	udp.Ports[0].Protocol = ptr.To(corev1.ProtocolUDP)
	var many []discoveryv1.Endpoint
	for i := range maxAPIServerEndpoints + 1 {
		many = append(many, endpoint(nil, fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)))
	}
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  string
	}{
		{"no endpoint", apiServerSlice(discoveryv1.AddressTypeIPv4, 6443), "names no ready address with a TCP port"},
		{"none ready", apiServerSlice(discoveryv1.AddressTypeIPv4, 6443, endpoint(ptr.To(false), "172.18.0.2")), "names no ready address"},
		{"no TCP port", udp, "names no ready address with a TCP port"},
		{"names, not addresses", apiServerSlice(discoveryv1.AddressTypeFQDN, 6443, endpoint(nil, "api.example.com")), "holds FQDN addresses"},
		{"not an address", apiServerSlice(discoveryv1.AddressTypeIPv4, 6443, endpoint(nil, "10.0.0.300")), `address "10.0.0.300"`},
		{"more than a policy is given", apiServerSlice(discoveryv1.AddressTypeIPv4, 6443, many...), "more than the 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := APIServerEndpointsOf(tc.slice)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("endpoints %v, error %v; want an error with %q", got, err, tc.want)
			}
		})
	}
}

func TestOnlyPortsTheEgressPoliciesDoNotOpenAreOffPolicy(t *testing.T) {
	got := OffPolicyPorts([]string{"172.18.0.2:6443", "34.1.2.3:443", "10.244.0.1:40677", "[fd00::1]:8443"})
	if want := []string{"10.244.0.1:40677", "[fd00::1]:8443"}; !slices.Equal(got, want) {
		t.Errorf("off-policy endpoints = %v, want %v", got, want)
	}
}

// PolicyAPIServerPorts repeats a fact of deploy/'s YAML for the CLI's
// warning; this keeps the two from parting.
func TestPolicyAPIServerPortsAreTheOnesDeploysEgressPolicyOpens(t *testing.T) {
	objs, err := Render(DefaultOptions("v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	policy := find(objs, "NetworkPolicy", "render-controller-egress")
	if policy == nil {
		t.Fatal("no NetworkPolicy render-controller-egress")
	}
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "egress")
	if len(rules) == 0 {
		t.Fatal("render-controller-egress has no egress rule")
	}
	ports, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "ports")
	var got []uint16
	for _, p := range ports {
		port, _, _ := unstructured.NestedInt64(p.(map[string]any), "port")
		got = append(got, uint16(port))
	}
	if !slices.Equal(got, PolicyAPIServerPorts) {
		t.Errorf("render-controller-egress's API server rule opens %v; PolicyAPIServerPorts = %v", got, PolicyAPIServerPorts)
	}
}
