// Command notification-controller turns the events that Plumb controllers
// publish on NATS JetStream into alerts (Alert, Provider) and receives Git
// host webhooks (Receiver) that trigger an immediate reconcile.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/time/rate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/config"
	notificationcontroller "plumb.dev/notification-controller/internal/controller"
	"plumb.dev/notification-controller/internal/dispatch"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/notification-controller/internal/receiver"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
)

const controllerName = dispatch.ControllerName

func main() {
	var (
		mgrOpts   options.Manager
		natsOpts  options.NATS
		notifOpts config.Notification
		refOpts   options.Reconcile
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	notifOpts.BindFlags(pflag.CommandLine)
	refOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, notifOpts, refOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, notifOpts config.Notification, refOpts options.Reconcile) error {
	app.SetupLogger(mgrOpts)
	log := ctrl.Log.WithName(controllerName)
	if err := refOpts.Validate(); err != nil {
		return err
	}
	if err := notifOpts.Validate(); err != nil {
		return err
	}
	notifOpts.NoCrossNamespaceRefs = refOpts.NoCrossNamespaceRefs
	scheme := app.NewScheme()
	// --watch-label-selector picks the Alerts, Providers and Receivers of
	// this shard; every shard reads every event from NATS, through a
	// durable consumer of its own (docs/design/sharding.md).
	notifOpts.ConsumerName = shardConsumer(mgrOpts, notifOpts.ConsumerName, pflag.CommandLine.Changed("nats-consumer"))
	mgr, err := app.NewManager(controllerName, app.RESTConfig(mgrOpts), scheme, mgrOpts,
		&notificationv1.Alert{}, &notificationv1.Provider{}, &notificationv1.Receiver{})
	if err != nil {
		return err
	}

	// Events go to the API server and, with --nats-url, to the stream;
	// what is still queued is sent once the manager has stopped.
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, natsOpts, controllerName, log)
	if err != nil {
		return err
	}
	defer closeEvents()

	copts := controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}
	// Provider deliveries and generic-oidc issuers' discovery and keys
	// alike go to addresses an object's author chose: both dial under
	// one egress policy.
	egress := notifier.AddressPolicy{AllowPrivate: notifOpts.AllowPrivateAddresses, AllowLoopback: notifOpts.AllowLoopbackAddresses}
	objectMetrics := notificationcontroller.NewMetrics(ctrlmetrics.Registry)
	if err := (&notificationcontroller.ProviderReconciler{
		Client:                mgr.GetClient(),
		Reader:                mgr.GetAPIReader(),
		Policy:                egress,
		MaxTimeout:            notifOpts.MaxProviderTimeout,
		SecretRefreshInterval: notifOpts.SecretRefreshInterval,
		RequeueDependency:     refOpts.RequeueDependency,
		Metrics:               objectMetrics,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	if err := (&notificationcontroller.AlertReconciler{
		Client: mgr.GetClient(), NoCrossNamespaceRefs: notifOpts.NoCrossNamespaceRefs, RequeueDependency: refOpts.RequeueDependency,
		Metrics: objectMetrics,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	if err := (&notificationcontroller.ReceiverReconciler{
		Client:                mgr.GetClient(),
		Reader:                mgr.GetAPIReader(),
		NoCrossNamespaceRefs:  notifOpts.NoCrossNamespaceRefs,
		SecretRefreshInterval: notifOpts.SecretRefreshInterval,
		RequeueDependency:     refOpts.RequeueDependency,
		Metrics:               objectMetrics,
	}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	// The webhook server and the loader of its tokens run on every replica.
	tokens := &receiver.Tokens{Rate: rate.Limit(notifOpts.ReceiverRate), Burst: notifOpts.ReceiverBurst}
	if err := (&receiver.TokenLoader{
		Client:          mgr.GetClient(),
		Reader:          mgr.GetAPIReader(),
		Tokens:          tokens,
		RefreshInterval: notifOpts.SecretRefreshInterval,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.Add(&receiver.Server{
		Addr:   notifOpts.ReceiverAddr,
		Client: mgr.GetClient(),
		Reader: mgr.GetAPIReader(),
		Tokens: tokens,
		Verifier: receiver.Verifier{
			IDTokens: receiver.NewIDTokens(notifOpts.GCRIssuer, notifOpts.GCRJWKSURL),
			OIDC:     receiver.NewOIDCTokens(notifier.NewHTTPClient(egress, 10*time.Second)),
		},
		MaxConcurrent:        notifOpts.ReceiverMaxConcurrent,
		MaxShare:             notifOpts.ReceiverMaxShare,
		BodyTimeout:          notifOpts.ReceiverBodyTimeout,
		NoCrossNamespaceRefs: notifOpts.NoCrossNamespaceRefs,
		Events:               recorder,
		Log:                  log.WithName("receiver"),
	}); err != nil {
		return err
	}
	if natsOpts.URL == "" {
		log.Info("no NATS URL given: alerts are not delivered")
	} else {
		dispatcher := &dispatch.Dispatcher{
			Metrics: dispatch.NewMetrics(ctrlmetrics.Registry),
			NATS:    natsOpts,
			Options: notifOpts,
			Client:  mgr.GetClient(),
			Reader:  mgr.GetAPIReader(),
			Events:  recorder,
			Log:     log.WithName("dispatch"),
		}
		if err := mgr.Add(dispatcher); err != nil {
			return err
		}
		// Not ready while NATS refuses the consumer's credentials.
		if err := mgr.AddReadyzCheck("nats-consumer", dispatcher.Check); err != nil {
			return err
		}
	}
	log.Info("starting", "receiverAddr", notifOpts.ReceiverAddr, "nats", natsOpts.URL != "")
	return mgr.Start(ctrl.SetupSignalHandler())
}

// shardConsumer is the durable consumer of this instance: the one
// --nats-consumer names, or, left unset with --watch-label-selector, the
// shard's own (the default with the selector's hash), so that two shards
// never share one consumer and split the events between them.
func shardConsumer(mgrOpts options.Manager, consumer string, explicit bool) string {
	if explicit {
		return consumer
	}
	return mgrOpts.ShardName(consumer)
}
