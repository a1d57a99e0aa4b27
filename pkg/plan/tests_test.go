package plan

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func testHookNames(hooks []TestHook) []string {
	var out []string
	for _, h := range hooks {
		out = append(out, h.GetName())
	}
	return out
}

func TestChartTestsAreInHelmsOrderWithTheirPolicies(t *testing.T) {
	g := NewWithT(t)
	in := objs(t, `
apiVersion: v1
kind: Pod
metadata: {name: b, annotations: {helm.sh/hook: test}}
---
apiVersion: v1
kind: Pod
metadata: {name: a, annotations: {helm.sh/hook: test, helm.sh/hook-weight: "1", helm.sh/hook-delete-policy: hook-succeeded}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: c, annotations: {helm.sh/hook: " Test-Success ", helm.sh/hook-weight: "-2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: weight-is-no-integer, annotations: {helm.sh/hook: test, helm.sh/hook-weight: "x"}}
---
apiVersion: v1
kind: Pod
metadata: {name: moved, annotations: {helm.sh/hook: test, plumb.dev/hook: PostSync}}
---
apiVersion: v1
kind: Pod
metadata: {name: argo, annotations: {helm.sh/hook: test, argocd.argoproj.io/hook: PreSync}}
---
apiVersion: v1
kind: Pod
metadata: {name: upgrade-hook, annotations: {helm.sh/hook: post-upgrade}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
`)
	hooks, err := ChartTests(in, "sync1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testHookNames(hooks)).To(Equal([]string{"c", "b", "weight-is-no-integer", "a"}), "by weight, then by name")
	g.Expect(hooks[0].Weight).To(Equal(-2))
	g.Expect(hooks[0].Phase).To(Equal(Test))
	g.Expect(hooks[3].Hook.DeletePolicies).To(Equal([]DeletePolicy{HookSucceeded}))
	g.Expect(hooks[1].Hook.DeletePolicies).To(Equal([]DeletePolicy{BeforeHookCreation}), "Helm's default")
	g.Expect(in[0].GetName()).To(Equal("b"), "the input is not changed")

	selected, err := ChartTests(in, "sync1", func(name string) bool { return name != "b" })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testHookNames(selected)).To(Equal([]string{"c", "weight-is-no-integer", "a"}))
}

func TestChartTestsNameAGenerateNameFromTheSyncID(t *testing.T) {
	g := NewWithT(t)
	in := objs(t, `
apiVersion: v1
kind: Pod
metadata: {generateName: conn-, annotations: {helm.sh/hook: test}}
`)
	one, err := ChartTests(in, "sync1", nil)
	g.Expect(err).NotTo(HaveOccurred())
	again, _ := ChartTests(in, "sync1", nil)
	other, _ := ChartTests(in, "sync2", nil)
	g.Expect(one[0].GetName()).To(HavePrefix("conn-"))
	g.Expect(one[0].GetName()).To(Equal(again[0].GetName()), "deterministic")
	g.Expect(one[0].GetName()).NotTo(Equal(other[0].GetName()), "new for another run")
	g.Expect(one[0].GetGenerateName()).To(BeEmpty())

	_, err = ChartTests(in, "", nil)
	g.Expect(err).To(MatchError(ContainSubstring("needs a sync id")))
	_, err = ChartTests(objs(t, `
apiVersion: v1
kind: Pod
metadata: {annotations: {helm.sh/hook: test, plumb.dev/hook-delete-policy: Never}}
`), "s", nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Count(err.Error(), "\n")).To(BeZero(), "one error: the nameless hook")
}
