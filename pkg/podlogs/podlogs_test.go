package podlogs

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestOptionsBoundEveryRead(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		req  Request
		want corev1.PodLogOptions
	}{
		{"no tail asked: the default tail", Request{Container: "app"},
			corev1.PodLogOptions{Container: "app", TailLines: n(DefaultTail), LimitBytes: n(MaxBytes)}},
		{"a tail", Request{Tail: n(3)}, corev1.PodLogOptions{TailLines: n(3), LimitBytes: n(MaxBytes)}},
		{"every line: still MaxBytes", Request{Tail: n(-1)}, corev1.PodLogOptions{LimitBytes: n(MaxBytes)}},
		{"a tail past MaxTail", Request{Tail: n(MaxTail + 1)}, corev1.PodLogOptions{TailLines: n(MaxTail), LimitBytes: n(MaxBytes)}},
		{"previous, follow, since", Request{Previous: true, Follow: true, SinceSeconds: 60},
			corev1.PodLogOptions{Previous: true, Follow: true, SinceSeconds: n(60), TailLines: n(DefaultTail), LimitBytes: n(MaxBytes)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(*tc.req.Options()).To(Equal(tc.want))
		})
	}
}

func TestLinesCutsALineLongerThanTheBound(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("x", 3*MaxLineBytes)
	var got []string
	g.Expect(Lines(strings.NewReader("a\n"+long+"\nb\r\nlast"), func(l string) bool {
		got = append(got, l)
		return true
	})).To(Succeed())
	g.Expect(got).To(HaveLen(4))
	g.Expect(got[0]).To(Equal("a"))
	g.Expect(got[1]).To(HaveLen(MaxLineBytes))
	g.Expect(got[2:]).To(Equal([]string{"b", "last"}), "CRLF and a last line without a newline")

	got = nil
	g.Expect(Lines(strings.NewReader("1\n2\n3\n"), func(l string) bool {
		got = append(got, l)
		return len(got) < 2
	})).To(Succeed())
	g.Expect(got).To(Equal([]string{"1", "2"}), "emit ends the read")
}

func TestContainersAreInTheOrderTheyRun(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "proxy"}},
	}}
	NewWithT(t).Expect(Containers(pod)).To(Equal([]string{"migrate", "app", "proxy"}))
}
