package install

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIServerSlice is the EndpointSlice in which the API server publishes
// its own addresses and port, those the `kubernetes` Service's 443 leads
// to: the API server writes it itself (its endpoint reconciler), in every
// cluster, under the Service's name.
var APIServerSlice = types.NamespacedName{Namespace: "default", Name: "kubernetes"}

// PolicyAPIServerPorts are the API server ports deploy/'s egress policies
// open (render-controller-egress.yaml's first rule, on the private
// ranges; a test reads them back from the render). An API server on
// another port is reached only through a rule of its own, which pins its
// address and port.
var PolicyAPIServerPorts = []uint16{443, 6443}

// maxAPIServerEndpoints bounds what is read: an API server has a handful
// of replicas, and each endpoint becomes a rule of the egress policies.
const maxAPIServerEndpoints = 64

// ReadAPIServerEndpoints reads APIServerSlice and returns its endpoints
// as Options.APIServerEndpoints takes them (APIServerEndpointsOf).
func ReadAPIServerEndpoints(ctx context.Context, c client.Reader) ([]string, error) {
	slice := &discoveryv1.EndpointSlice{}
	if err := c.Get(ctx, APIServerSlice, slice); err != nil {
		return nil, fmt.Errorf("reading EndpointSlice %s: %w", APIServerSlice, err)
	}
	return APIServerEndpointsOf(slice)
}

// APIServerEndpointsOf are the IP:port pairs of slice, sorted so that the
// same slice renders the same policies (bootstrap commits nothing when
// they are unchanged): each address not marked unready, with each TCP
// port. A slice that names no usable endpoint, or more than
// maxAPIServerEndpoints, is an error: the caller then keeps deploy/'s
// rules alone.
func APIServerEndpointsOf(slice *discoveryv1.EndpointSlice) ([]string, error) {
	if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
		return nil, fmt.Errorf("EndpointSlice %s/%s holds %s addresses, not IP addresses", slice.Namespace, slice.Name, slice.AddressType)
	}
	var ports []uint16
	for _, p := range slice.Ports {
		if p.Port == nil || *p.Port < 1 || *p.Port > 65535 || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
			continue
		}
		ports = append(ports, uint16(*p.Port))
	}
	var eps []string
	for _, e := range slice.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		for _, a := range e.Addresses {
			addr, err := netip.ParseAddr(a)
			if err != nil {
				return nil, fmt.Errorf("EndpointSlice %s/%s: address %q: %w", slice.Namespace, slice.Name, a, err)
			}
			for _, port := range ports {
				eps = append(eps, netip.AddrPortFrom(addr.Unmap(), port).String())
			}
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("EndpointSlice " + slice.Namespace + "/" + slice.Name + " names no ready address with a TCP port")
	}
	slices.Sort(eps)
	eps = slices.Compact(eps)
	if len(eps) > maxAPIServerEndpoints {
		return nil, fmt.Errorf("EndpointSlice %s/%s names %d endpoints, more than the %d an egress policy is given", slice.Namespace, slice.Name, len(eps), maxAPIServerEndpoints)
	}
	return eps, nil
}

// OffPolicyPorts are the endpoints of eps whose port is none of
// PolicyAPIServerPorts: those deploy/'s own rules never let through,
// reached only while the rule for their exact address and port holds.
func OffPolicyPorts(eps []string) []string {
	var off []string
	for _, ep := range eps {
		ap, err := netip.ParseAddrPort(ep)
		if err == nil && !slices.Contains(PolicyAPIServerPorts, ap.Port()) {
			off = append(off, ep)
		}
	}
	return off
}
