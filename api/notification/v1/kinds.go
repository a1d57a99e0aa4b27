package v1

// The kind facts of api/meta for the notification kinds: watched, not
// scheduled, and with no artifact.

// IsSuspended says whether spec.suspend stops sending.
func (in *Alert) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend stops deliveries.
func (in *Provider) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend answers calls with 503.
func (in *Receiver) IsSuspended() bool { return in.Spec.Suspend }
