package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"plumb.dev/e2e/localenv"
)

// env is the one environment every test shares; each test deploys its own
// copy of the sample into namespaces of its own. Tests on it do not run in
// parallel: one of them kills and restarts sync-controller. (The sample's
// stories on a real node, which have an environment of their own, do:
// startRealNodeDemo.)
var env *localenv.Env

// plumbCLI is the plumb binary the tests run, built with the controllers.
var plumbCLI string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := localenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Build the controllers and plumb from the tree under test, not
	// whatever bin/ holds; PLUMB_E2E_BIN_DIR names a folder of prebuilt
	// ones instead.
	binDir := os.Getenv("PLUMB_E2E_BIN_DIR")
	if binDir == "" {
		if binDir, err = buildControllers(root); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: building the controllers: %v\n", err)
			return 1
		}
		defer os.RemoveAll(binDir)
	}

	plumbCLI = filepath.Join(binDir, "plumb")

	start := time.Now()
	// Start waits for slow steps (saying what for on stderr) up to this.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// As deploy/ runs them: no reference leaves its namespace, and a
	// Kustomization without spec.serviceAccountName acts as its
	// namespace's ServiceAccount default (TestTenantsStayInsideTheirNamespaces,
	// TestATenantsDefaultServiceAccountBoundsItsKustomization; the other
	// stories keep every reference in one namespace and name a
	// ServiceAccount with the rights they need).
	args := localenv.TenancyArgs()
	// Every alert reaches the Slack stand-in, and a failed delivery is
	// retried soon.
	args[localenv.NotificationController] = append(args[localenv.NotificationController], "--rate-limit-interval=0s", "--delivery-retry-backoff=200ms")
	// A render past 30 s is a hostile one here
	// (TestAHostileChartCostsItsOwnTenantOnly).
	args[localenv.RenderController] = append(args[localenv.RenderController], "--render-timeout=30s")
	env, err = localenv.Start(ctx, localenv.Options{
		Root:           root,
		BinDir:         binDir,
		Progress:       os.Stderr,
		ControllerArgs: args,
		// The registry with the sample's images, for its image
		// automation (TestANewImageTagRollsOutThroughAGitCommit).
		Registry: true,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the environment: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: environment ready in %s (state in %s)\n", time.Since(start).Round(time.Millisecond), env.StateDir)
	code := m.Run()
	if code != 0 {
		// The state folder goes with Stop: show the ends of the logs.
		for _, name := range localenv.ControllerNames {
			c := env.Controllers[name]
			fmt.Fprintf(os.Stderr, "---- %s (last lines of %s)\n%s\n", name, c.LogPath, localenv.Tail(c.LogPath, 40))
		}
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping the environment: %v\n", err)
	}
	if err := stopSharedRealNode(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping the shared real node: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if err := stopInClusterNode(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping the in-cluster node: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// buildControllers builds the five controllers into a new folder.
func buildControllers(root string) (string, error) {
	binDir, err := os.MkdirTemp("", "plumb-e2e-bin-")
	if err != nil {
		return "", err
	}
	start := time.Now()
	args := []string{"build", "-o", binDir + string(filepath.Separator)}
	for _, name := range localenv.ControllerNames {
		args = append(args, "./"+name)
	}
	build := exec.Command("go", args...)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(binDir)
		return "", err
	}
	// The example config-management plugin, which the launcher runs
	// beside render-controller (localenv.Env.Plugin).
	build = exec.Command("go", "build", "-o", filepath.Join(binDir, localenv.ExamplePluginBinary), localenv.ExamplePluginPackage)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(binDir)
		return "", err
	}
	// The plumb command line, for the launcher's "Try" commands.
	build = exec.Command("go", "build", "-o", filepath.Join(binDir, "plumb"), "./cli")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(binDir)
		return "", err
	}
	fmt.Fprintf(os.Stderr, "e2e: built the controllers in %s\n", time.Since(start).Round(time.Millisecond))
	return binDir, nil
}
