package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/glob"
	"plumb.dev/notification-controller/internal/secret"
	"plumb.dev/pkg/events"
)

// MaxBodySize bounds a webhook body; larger calls get 413.
const MaxBodySize = 3 << 20

// WebhookPathIndex is the field index of Receivers by status.webhookPath,
// which the server looks calls up by.
const WebhookPathIndex = ".status.webhookPath"

// Reasons of the events recorded on Receivers.
const (
	ReconcileRequestedReason = "ReconcileRequested"
)

var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "plumb_notification_receiver_requests_total",
	Help: "Webhook calls by HTTP status code of the answer.",
}, []string{"code"})

func init() { metrics.Registry.MustRegister(requests) }

// Server serves the webhook endpoint. It runs on every replica (the
// Service spreads calls), reading Receivers from the manager's cache.
type Server struct {
	// Addr is the address to listen on.
	Addr string
	// Client reads Receivers (cached, indexed by WebhookPathIndex) and
	// patches the annotated resources.
	Client client.Client
	// Reader reads Secrets and lists resources by label, uncached.
	Reader client.Reader
	// Events records what each valid call did.
	Events *events.Recorder
	Log    logr.Logger
	// Now returns the requestedAt value; time.Now when nil.
	Now func() time.Time
}

// NeedLeaderElection lets every replica serve.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	return s.Serve(ctx, l)
}

// Serve serves on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	s.Log.Info("serving webhooks", "addr", l.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// Handler returns the HTTP handler: POST /hook/<id>.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/{id}", s.hook)
	mux.HandleFunc("/hook/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		s.answer(w, http.StatusMethodNotAllowed, "only POST")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, http.StatusNotFound, "not found")
	})
	return mux
}

func (s *Server) answer(w http.ResponseWriter, code int, format string, args ...any) {
	requests.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	path := "/hook/" + r.PathValue("id")
	rcv, err := s.lookup(ctx, path)
	if err != nil {
		s.Log.Error(err, "looking up a receiver")
		s.answer(w, http.StatusInternalServerError, "internal error")
		return
	}
	if rcv == nil {
		s.answer(w, http.StatusNotFound, "not found")
		return
	}
	log := s.Log.WithValues("receiver", rcv.Namespace+"/"+rcv.Name)
	if rcv.Spec.Suspend {
		s.answer(w, http.StatusServiceUnavailable, "receiver is suspended")
		return
	}
	if !conditions.IsReady(rcv) {
		s.answer(w, http.StatusServiceUnavailable, "receiver is not ready")
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodySize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.answer(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", MaxBodySize)
			return
		}
		s.answer(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}

	token, err := secret.Token(ctx, s.Reader, rcv.Namespace, rcv.Spec.SecretRef.Name)
	if err != nil {
		log.Info("cannot read the receiver's token", "error", err.Error())
		s.answer(w, http.StatusServiceUnavailable, "receiver is not ready")
		return
	}
	// The path is derived from the token: a path that no longer matches
	// the token (rotated, status not yet updated) is not this Receiver's.
	if WebhookPath(token, rcv.Name, rcv.Namespace) != path {
		s.answer(w, http.StatusNotFound, "not found")
		return
	}
	verdict, err := Verify(rcv.Spec.Type, token, rcv.Spec.Events, r.Header, body)
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			log.Info("rejected a webhook call", "error", err.Error())
			s.answer(w, http.StatusUnauthorized, "%v", err)
			return
		}
		s.answer(w, http.StatusBadRequest, "%v", err)
		return
	}
	if !verdict.Trigger {
		s.answer(w, http.StatusOK, "nothing to do: %s", verdict.Note)
		return
	}

	requested, err := s.requestReconcile(ctx, rcv)
	if err != nil {
		log.Error(err, "requesting reconciles")
		s.answer(w, http.StatusInternalServerError, "requesting reconciles failed")
		return
	}
	msg := fmt.Sprintf("requested a reconcile of %s", strings.Join(requested, ", "))
	if len(requested) == 0 {
		msg = "no resource matched"
	}
	if verdict.Event != "" {
		msg = fmt.Sprintf("%s event: %s", verdict.Event, msg)
	}
	if s.Events != nil {
		s.Events.Record(rcv, events.SeverityInfo, ReconcileRequestedReason, msg,
			events.WithMetadata(map[string]string{"resources": strconv.Itoa(len(requested))}))
	}
	log.V(1).Info("webhook accepted", "event", verdict.Event, "resources", requested)
	s.answer(w, http.StatusOK, "%s", msg)
}

// lookup finds the Receiver served on path, or nil.
func (s *Server) lookup(ctx context.Context, path string) (*notificationv1.Receiver, error) {
	var list notificationv1.ReceiverList
	if err := s.Client.List(ctx, &list, client.MatchingFields{WebhookPathIndex: path}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// kinds are the resources a webhook may request a reconcile of.
var kinds = map[string]schema.GroupVersionKind{
	sourcev1.GitRepositoryKind:    sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind),
	kustomizev1.KustomizationKind: kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
}

// SupportedKind reports whether a webhook can request a reconcile of kind.
func SupportedKind(kind string) bool {
	_, ok := kinds[kind]
	return ok
}

// requestReconcile sets the requestedAt annotation on every resource the
// Receiver names and returns them as Kind/namespace/name.
func (s *Server) requestReconcile(ctx context.Context, rcv *notificationv1.Receiver) ([]string, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	value := now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{meta.ReconcileRequestAnnotation: value}}})
	if err != nil {
		return nil, err
	}
	var done []string
	for _, ref := range rcv.Spec.Resources {
		gvk, ok := kinds[ref.Kind]
		if !ok {
			continue // the reconciler reports it as an invalid spec
		}
		ns := ref.Namespace
		if ns == "" {
			ns = rcv.Namespace
		}
		targets, err := s.resolve(ctx, gvk, ns, ref)
		if err != nil {
			return done, err
		}
		for _, name := range targets {
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(gvk)
			obj.SetNamespace(ns)
			obj.SetName(name)
			if err := s.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return done, fmt.Errorf("annotating %s %s/%s: %w", gvk.Kind, ns, name, err)
			}
			done = append(done, gvk.Kind+"/"+ns+"/"+name)
		}
	}
	return done, nil
}

// resolve returns the names a resource reference stands for: the name
// itself, or for a name with '*' the objects whose names match and that
// carry matchLabels.
func (s *Server) resolve(ctx context.Context, gvk schema.GroupVersionKind, ns string, ref notificationv1.CrossNamespaceObjectReference) ([]string, error) {
	if !strings.Contains(ref.Name, "*") {
		return []string{ref.Name}, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := s.Reader.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(ref.MatchLabels)}); err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, ns, err)
	}
	var names []string
	for _, item := range list.Items {
		if glob.Match(ref.Name, item.Name) {
			names = append(names, item.Name)
		}
	}
	return names, nil
}
