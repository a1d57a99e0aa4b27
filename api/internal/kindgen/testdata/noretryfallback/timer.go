// Package noretryfallback has a kind with spec.retryInterval and no
// spec.interval of type metav1.Duration, which kindgen refuses.
package noretryfallback

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type Timer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TimerSpec `json:"spec,omitempty"`
}

type TimerSpec struct {
	Interval      *metav1.Duration `json:"interval,omitempty"`
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}
