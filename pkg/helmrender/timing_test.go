package helmrender

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"
)

func TestTiming(t *testing.T) {
	platform := saveChart(t, filepath.Join("bench", "testdata", "platform"))
	opts := Options{ReleaseName: "shop", Namespace: "prod", IsInstall: true, Capabilities: Capabilities{KubeVersion: "v1.37.2"}}
	f, _ := os.Create("/tmp/cpu.prof")
	pprof.StartCPUProfile(f)
	start := time.Now()
	res := mustRender(t, platform, opts)
	pprof.StopCPUProfile()
	t.Logf("plumb: %v, %d objects, %d bytes", time.Since(start), res.Objects, len(res.Manifests))
	start = time.Now()
	out := helmTemplate(t, platform, opts, nil)
	t.Logf("helm: %v, %d bytes", time.Since(start), len(out))
}
