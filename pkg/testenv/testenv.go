package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"plumb.dev/pkg/app"
)

// AssetsEnv names the environment variable that overrides where the
// control-plane binaries are looked for (the envtest convention).
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Environment is a running control plane and NATS server.
type Environment struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is an uncached client with Plumb's scheme.
	Client client.Client
	// Scheme holds the built-in kinds and Plumb's APIs.
	Scheme *runtime.Scheme
	// NATSURL is the embedded NATS server's client URL.
	NATSURL string
	// NATS is the embedded NATS server; tests may Shutdown and restart it
	// with RestartNATS to simulate an outage.
	NATS *natsserver.Server
	// SecureNATS holds the users, passwords and certificates of a NATS
	// server started WithSecureNATS; nil otherwise.
	SecureNATS *SecureNATS

	control  *envtest.Environment
	natsOpts func() (*natsserver.Options, error)
	natsPort int
	tempDir  string
}

// Option changes how an environment starts.
type Option func(*config)

type config struct {
	withoutNATS bool
	secureNATS  bool
}

// WithoutNATS starts no NATS server.
func WithoutNATS() Option { return func(c *config) { c.withoutNATS = true } }

// WithSecureNATS starts a NATS server the way deploy/ runs it: only the
// users of deploy/nats/accounts.conf, with their permissions, and only
// over TLS with a client certificate. Environment.SecureNATS gives each
// user's options.
func WithSecureNATS() Option { return func(c *config) { c.secureNATS = true } }

// Start starts kube-apiserver, etcd and NATS and installs Plumb's CRDs. It
// fails with a message that says how to build the binaries when they are
// missing.
func Start(opts ...Option) (*Environment, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	tempDir, err := os.MkdirTemp("", "plumb-testenv-")
	if err != nil {
		return nil, err
	}
	env := &Environment{Scheme: app.NewScheme(), tempDir: tempDir}

	env.control = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   env.Scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if env.Config, err = env.control.Start(); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	if env.Client, err = client.New(env.Config, client.Options{Scheme: env.Scheme}); err != nil {
		_ = env.Stop()
		return nil, err
	}

	if !cfg.withoutNATS {
		env.natsOpts = func() (*natsserver.Options, error) {
			return &natsserver.Options{
				Host:      "127.0.0.1",
				Port:      natsserver.RANDOM_PORT,
				JetStream: true,
				StoreDir:  filepath.Join(tempDir, "nats"),
				NoLog:     true,
				NoSigs:    true,
			}, nil
		}
		if cfg.secureNATS {
			if env.SecureNATS, err = newSecureNATS(root, filepath.Join(tempDir, "nats-auth")); err != nil {
				_ = env.Stop()
				return nil, err
			}
			env.natsOpts = func() (*natsserver.Options, error) {
				return env.SecureNATS.serverOptions(filepath.Join(tempDir, "nats"))
			}
		}
		if err := env.startNATS(); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return env, nil
}

func (e *Environment) startNATS() error {
	opts, err := e.natsOpts()
	if err != nil {
		return fmt.Errorf("configuring the NATS server: %w", err)
	}
	if e.natsPort != 0 {
		// Keep the port across restarts so clients reconnect to the same URL.
		opts.Port = e.natsPort
	}
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		return fmt.Errorf("creating the NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return errors.New("the embedded NATS server did not become ready in 30s")
	}
	e.NATS = srv
	e.NATSURL = srv.ClientURL()
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		e.natsPort = addr.Port
	}
	return nil
}

// StopNATS shuts the NATS server down, keeping its stored streams, so a test
// can see how clients behave while NATS is unreachable.
func (e *Environment) StopNATS() {
	if e.NATS != nil {
		e.NATS.Shutdown()
		e.NATS.WaitForShutdown()
	}
}

// RestartNATS starts the NATS server again on the same port and store.
func (e *Environment) RestartNATS() error {
	if e.natsOpts == nil {
		return errors.New("this environment was started without NATS")
	}
	e.StopNATS()
	return e.startNATS()
}

// Run is the TestMain of a package whose tests share one environment: it
// starts one with opts into *env, runs the tests, stops it and returns the
// exit code for os.Exit.
func Run(m *testing.M, env **Environment, opts ...Option) int {
	var err error
	if *env, err = Start(opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := (*env).Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Stop tears the control plane and NATS down and removes temporary files.
// It is safe to call on a partly started environment.
func (e *Environment) Stop() error {
	var errs []error
	e.StopNATS()
	if e.control != nil {
		if err := e.control.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the control plane: %w", err))
		}
	}
	if e.tempDir != "" {
		errs = append(errs, os.RemoveAll(e.tempDir))
	}
	return errors.Join(errs...)
}

// Namespace creates a namespace with a unique name starting with prefix and
// returns its name. Each test gets its own, because envtest never finishes
// deleting one.
func (e *Environment) Namespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating a test namespace: %w", err)
	}
	return ns.Name, nil
}

// RepoRoot returns the folder holding go.work, searched upward from the
// working directory, which for `go test` is the package's folder.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found above the working directory; run tests inside the Plumb checkout")
		}
		dir = parent
	}
}

// AssetsDir returns the folder with kube-apiserver and etcd: $KUBEBUILDER_ASSETS
// when set, otherwise bin/k8s in the checkout.
func AssetsDir(root string) (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s is missing from %s: run `make envtest-assets` to build the control plane", name, dir)
		}
	}
	return dir, nil
}
