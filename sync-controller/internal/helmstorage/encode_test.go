package helmstorage

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// captured is a SecretInterface that keeps what the SDK's driver writes
// and serves it back.
type captured struct {
	typedcorev1.SecretInterface
	sec *corev1.Secret
}

func (c *captured) Create(_ context.Context, s *corev1.Secret, _ metav1.CreateOptions) (*corev1.Secret, error) {
	c.sec = s
	return s, nil
}

func (c *captured) Update(_ context.Context, s *corev1.Secret, _ metav1.UpdateOptions) (*corev1.Secret, error) {
	c.sec = s
	return s, nil
}

func (c *captured) Get(context.Context, string, metav1.GetOptions) (*corev1.Secret, error) {
	return c.sec, nil
}

func sampleRelease(version int, status common.Status) *rspb.Release {
	return &rspb.Release{
		Name: "podinfo", Namespace: "apps", Version: version,
		Info: &rspb.Info{Status: status, Description: "Upgrade complete", Notes: "Say hi.\n",
			FirstDeployed: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC), LastDeployed: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)},
		Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "podinfo", Version: "6.7.0", APIVersion: "v2"},
			Values: map[string]any{"replicaCount": 1}},
		Config:   map[string]any{"message": "hi"},
		Manifest: strings.Repeat("---\n# Source: podinfo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n", 200),
		Labels:   map[string]string{"team": "a"},
	}
}

func TestRecordsAreTheSDKsEncoding(t *testing.T) {
	g := NewWithT(t)
	for i, rel := range []*rspb.Release{sampleRelease(3, common.StatusDeployed), sampleRelease(2, common.StatusSuperseded)} {
		create := i == 0
		sdk := &captured{}
		key := Key(rel.Name, rel.Version)
		if create {
			g.Expect(driver.NewSecrets(sdk).Create(key, rel)).To(Succeed())
		} else {
			g.Expect(driver.NewSecrets(sdk).Update(key, rel)).To(Succeed())
		}
		ours, err := newRecordSecret(key, rel, create, time.Now())
		g.Expect(err).NotTo(HaveOccurred())

		g.Expect(ours.Name).To(Equal(sdk.sec.Name))
		g.Expect(ours.Type).To(Equal(sdk.sec.Type))
		g.Expect(string(ours.Data["release"])).To(Equal(string(sdk.sec.Data["release"])), "the same bytes as the SDK's encoding")
		g.Expect(ours.Labels).To(HaveLen(len(sdk.sec.Labels)))
		for k, v := range sdk.sec.Labels {
			if k == "createdAt" || k == "modifiedAt" {
				g.Expect(ours.Labels).To(HaveKey(k))
				continue
			}
			g.Expect(ours.Labels).To(HaveKeyWithValue(k, v))
		}

		// The driver reads it back as the release written.
		back, err := driver.NewSecrets(&captured{sec: ours}).Get(key)
		g.Expect(err).NotTo(HaveOccurred())
		got := back.(*rspb.Release)
		g.Expect(got.Manifest).To(Equal(rel.Manifest))
		g.Expect(got.Info.Status).To(Equal(rel.Info.Status))
		g.Expect(got.Config).To(Equal(rel.Config))
	}
}

// A pooled compressor carries nothing of one record into the next, also
// when records are encoded at once.
func TestPooledCompressorsEncodeEachRecordAlone(t *testing.T) {
	g := NewWithT(t)
	want := map[int]string{}
	for v := 1; v <= 8; v++ {
		sdk := &captured{}
		g.Expect(driver.NewSecrets(sdk).Create(Key("podinfo", v), sampleRelease(v, common.StatusDeployed))).To(Succeed())
		want[v] = string(sdk.sec.Data["release"])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 8 {
		for v := 1; v <= 8; v++ {
			wg.Go(func() {
				got, err := encodeRecord(sampleRelease(v, common.StatusDeployed))
				if err != nil || string(got) != want[v] {
					errs <- Key("podinfo", v)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var bad []string
	for k := range errs {
		bad = append(bad, k)
	}
	g.Expect(bad).To(BeEmpty())
}
