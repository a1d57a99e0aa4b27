// Command hook is the sample application's migration stand-in, run by its
// PreSync hook Job (deploy/examples/app/migrate-job.yaml) and the chart's
// pre-install/pre-upgrade hook (deploy/examples/helm/hello). It prints
// each step to stdout, so `plumb logs` and `kubectl logs` show what ran,
// and exits with the code it is told to, so a commit can make the hook
// fail:
//
//	-steps N            how many steps to take (STEPS, default 3)
//	-step-duration D    how long each lasts (STEP_DURATION, default 1s)
//	-exit-code C        the exit code at the end (EXIT_CODE, default 0)
//	-to V               the schema version migrated to (TO, default the
//	                    program's version)
//	-configmap NAME     record the migration in this ConfigMap of the Pod's
//	                    namespace, through the API server with the Pod's
//	                    ServiceAccount (CONFIGMAP; it needs get and patch
//	                    on configmaps): print the schema found there, then
//	                    write schema=V by server-side apply
//
// It writes nothing to disk and needs no shell. It is built into an image
// by plumb.dev/pkg/imagebuild (docs/images.md); the builder links Version
// and Commit.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"
)

// Set by the image builder (-ldflags -X main.Version=…).
var (
	Version = "dev"
	Commit  = ""
)

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	code, err := run(os.Args[1:])
	if err != nil {
		log.Print("hook: ", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// Bounds, so a typo in a manifest cannot keep a Job running for a day.
const (
	maxSteps        = 1000
	maxStepDuration = 10 * time.Minute
)

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hook [flags]\n\nThe sample app's migration stand-in. Each flag defaults to its environment variable (STEPS, STEP_DURATION, EXIT_CODE, TO, CONFIGMAP).\n\n")
		fs.PrintDefaults()
	}
	var (
		steps     = fs.Int("steps", envInt("STEPS", 3), "how many steps to take")
		stepDur   = fs.Duration("step-duration", envDuration("STEP_DURATION", time.Second), "how long each step lasts")
		exitCode  = fs.Int("exit-code", envInt("EXIT_CODE", 0), "the exit code at the end")
		to        = fs.String("to", env("TO", Version), "the schema version migrated to")
		configMap = fs.String("configmap", env("CONFIGMAP", ""), "record the migration in this ConfigMap of the Pod's namespace (needs get and patch on configmaps)")
		saDir     = fs.String("serviceaccount-dir", serviceAccountDir, "where the Pod's ServiceAccount token, CA and namespace are mounted")
		apiServer = fs.String("api-server", "", "the API server's URL; default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT")
	)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, nil
		}
		return 2, nil
	}
	switch {
	case *steps < 0 || *steps > maxSteps:
		return 0, fmt.Errorf("steps %d: want 0 to %d", *steps, maxSteps)
	case *stepDur < 0 || *stepDur > maxStepDuration:
		return 0, fmt.Errorf("step duration %s: want 0 to %s", *stepDur, maxStepDuration)
	case *exitCode < 0 || *exitCode > 255:
		return 0, fmt.Errorf("exit code %d: want 0 to 255", *exitCode)
	}

	log.Printf("hook %s: migrating to schema %s in %d steps", versionString(), *to, *steps)
	var api *cluster
	if *configMap != "" {
		var err error
		if api, err = inCluster(*apiServer, *saDir); err != nil {
			return 0, err
		}
		was, err := api.getData(*configMap, schemaKey)
		if err != nil {
			return 0, err
		}
		log.Printf("ConfigMap %s/%s: schema %s", api.namespace, *configMap, orNone(was))
	}
	for i := 1; i <= *steps; i++ {
		log.Printf("step %d/%d", i, *steps)
		time.Sleep(*stepDur)
	}
	if api != nil {
		if err := api.applyData(*configMap, map[string]string{schemaKey: *to}); err != nil {
			return 0, err
		}
		log.Printf("ConfigMap %s/%s: schema %s recorded", api.namespace, *configMap, *to)
	}
	if *exitCode != 0 {
		log.Printf("failing with exit code %d, as told", *exitCode)
		return *exitCode, nil
	}
	log.Print("done")
	return 0, nil
}

// schemaKey is the ConfigMap key the migration records.
const schemaKey = "schema"

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// versionString is the version, with the commit when the builder set one.
func versionString() string {
	if Commit == "" {
		return Version
	}
	return Version + " (commit " + Commit + ")"
}
