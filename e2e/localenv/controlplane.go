package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startControlPlane starts etcd and kube-apiserver through envtest (which
// generates the serving certificates and the service-account signing key),
// installs Plumb's CRDs and admission policies, writes an admin kubeconfig, and starts
// kube-controller-manager against it.
func (e *Env) startControlPlane(ctx context.Context) error {
	certDir := filepath.Join(e.StateDir, "apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	// envtest picks etcd's and kube-apiserver's ports by binding port 0
	// and closing it (coordinated with other envtest users through lock
	// files, not with every process on the machine), and the processes
	// bind them again: another process may take one in between. Such a
	// start fails; it is tried again on new ports.
	var (
		cfg *rest.Config
		err error
	)
	for attempt := 1; ; attempt++ {
		e.control = &envtest.Environment{
			BinaryAssetsDirectory:    e.opts.AssetsDir,
			CRDDirectoryPaths:        []string{filepath.Join(e.Root, "deploy", "crds")},
			ErrorIfCRDPathMissing:    true,
			Scheme:                   e.Scheme,
			ControlPlaneStartTimeout: e.opts.StartTimeout,
			ControlPlaneStopTimeout:  time.Minute,
		}
		// A known data folder, kept when etcd stops, so RestartEtcd
		// starts it again on the same data; emptied of a failed
		// attempt's.
		etcdDir := filepath.Join(e.StateDir, "etcd")
		if err := os.RemoveAll(etcdDir); err != nil {
			return err
		}
		e.control.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
		// A known certificate folder, so kube-controller-manager can sign
		// service-account tokens with the key the API server verifies them by.
		e.control.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
		// A real node's kubelet has no name the machine's resolver knows:
		// logs, exec and port-forward reach it at its InternalIP (the
		// bridge's address; node.go).
		e.control.ControlPlane.APIServer.Configure().Set("kubelet-preferred-address-types", "InternalIP,Hostname")
		if e.opts.Node == NodeReal {
			if err := configureInCluster(e.control.ControlPlane.APIServer, certDir); err != nil {
				return fmt.Errorf("the API server's certificates for the node's Pods: %w", err)
			}
		}
		e.progress("starting etcd and kube-apiserver")
		if cfg, err = e.control.Start(); err == nil {
			break
		}
		_ = e.control.Stop()
		e.control = nil
		if attempt == 3 || ctx.Err() != nil {
			return fmt.Errorf("starting etcd and kube-apiserver from %s (%d attempts): %w", e.opts.AssetsDir, attempt, err)
		}
		e.progress("etcd and kube-apiserver did not start (%v); trying again on new ports", err)
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return err
	}
	// envtest starts etcd and kube-apiserver without tying them to this
	// process; should it die without Stop, the reaper ends them.
	if err := e.startReaper(); err != nil {
		return err
	}

	// The admin user is in system:masters: the controllers and
	// kube-controller-manager run with it, as would `kubectl`.
	user, err := e.control.ControlPlane.AddUser(envtest.User{Name: "plumb-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding the admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	e.Kubeconfig = filepath.Join(e.StateDir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	caFile := filepath.Join(certDir, "ca.crt")
	if err := os.WriteFile(caFile, e.control.ControlPlane.APIServer.SecureServing.CA, 0o644); err != nil {
		return err
	}
	e.APIServerURL = cfg.Host
	e.progress("installing the admission policies")
	if err := e.installAdmissionPolicies(ctx); err != nil {
		return err
	}

	e.KCM = &Process{
		Name:    "kube-controller-manager",
		Path:    filepath.Join(e.opts.AssetsDir, "kube-controller-manager"),
		LogPath: filepath.Join(e.StateDir, "logs", "kube-controller-manager.log"),
		Args: []string{
			"--kubeconfig=" + e.Kubeconfig,
			"--controllers=*",
			"--leader-elect=false",
			"--secure-port=0",
			"--use-service-account-credentials=false",
			"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
			"--root-ca-file=" + caFile,
			// Small clusters, short waits: Jobs and Deployments get status
			// in well under a second.
			"--concurrent-deployment-syncs=2",
			"--concurrent-job-syncs=2",
			"--v=1",
		},
	}
	e.progress("starting kube-controller-manager")
	if err := e.KCM.Start(); err != nil {
		return err
	}
	return e.waitKCM(ctx)
}

// waitKCM waits until kube-controller-manager's serviceaccount controller
// has created the default ServiceAccount, the first sign it runs, for as
// long as ctx allows.
func (e *Env) waitKCM(ctx context.Context) error {
	began, said := time.Now(), time.Now()
	for {
		sa := &corev1.ServiceAccount{}
		if err := e.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "default"}, sa); err == nil {
			return nil
		}
		if done, exitErr := e.KCM.Exited(); isClosed(done) {
			return fmt.Errorf("kube-controller-manager exited (%v); the end of its log:\n%s", exitErr(), Tail(e.KCM.LogPath, 15))
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			e.progress("still waiting for kube-controller-manager to create the default ServiceAccount (%s)", time.Since(began).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager did not start its controllers in %s; the end of its log %s:\n%s", time.Since(began).Round(time.Second), e.KCM.LogPath, Tail(e.KCM.LogPath, 15))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
