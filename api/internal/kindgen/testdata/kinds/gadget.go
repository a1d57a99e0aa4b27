package kinds

import (
	"time"

	k8smeta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// Gadget declares two of its methods by hand, so kindgen writes only
// IsSuspended; its file names apimachinery's package k8smeta.
type Gadget struct {
	k8smeta.TypeMeta   `json:",inline"`
	k8smeta.ObjectMeta `json:"metadata,omitempty"`

	Spec GadgetSpec `json:"spec,omitempty"`
}

type GadgetSpec struct {
	Interval      k8smeta.Duration  `json:"interval,omitempty"`
	RetryInterval *k8smeta.Duration `json:"retryInterval,omitempty"`
	Suspend       bool              `json:"suspend,omitempty"`
}

// GetRequeueAfter returns spec.interval, 10m when unset.
func (in Gadget) GetRequeueAfter() time.Duration {
	if in.Spec.Interval.Duration == 0 {
		return 10 * time.Minute
	}
	return in.Spec.Interval.Duration
}

// GetRetryInterval returns spec.retryInterval, or a minute when unset.
func (in *Gadget) GetRetryInterval() time.Duration {
	if in.Spec.RetryInterval == nil {
		return time.Minute
	}
	return in.Spec.RetryInterval.Duration
}

// Sprocket's fields have the names kindgen knows but not their types, so
// it gets no method.
type Sprocket struct {
	k8smeta.TypeMeta   `json:",inline"`
	k8smeta.ObjectMeta `json:"metadata,omitempty"`

	Spec   SprocketSpec   `json:"spec,omitempty"`
	Status SprocketStatus `json:"status,omitempty"`
}

type SprocketSpec struct {
	Interval *k8smeta.Duration `json:"interval,omitempty"`
	Suspend  *bool             `json:"suspend,omitempty"`
}

type SprocketStatus struct {
	Artifact meta.Artifact `json:"artifact"`
}
