package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/listen"
	"plumb.dev/pkg/panics"
)

// MaxBodySize bounds a webhook body; larger calls get 413.
const MaxBodySize = 3 << 20

var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "plumb_notification_receiver_requests_total",
	Help: "Webhook calls by HTTP status code of the answer.",
}, []string{"code"})

func init() { metrics.Registry.MustRegister(requests) }

// Server serves the webhook endpoint. It runs on every replica (the
// Service spreads calls), reading Receivers from the manager's cache and
// their tokens from Tokens: a call costs no API request until its
// signature is verified.
type Server struct {
	// Addr is the address to listen on.
	Addr string
	// Client reads Receivers (cached) and patches the annotated resources.
	Client client.Client
	// Reader lists resources by label for wildcard names, uncached.
	Reader client.Reader
	// Tokens holds the Receivers' tokens and rate limiters.
	Tokens *Tokens
	// Verifier checks each call; its IDTokens verifies gcr calls.
	Verifier Verifier
	// MaxConcurrent bounds the calls handled at once; more are answered 429.
	MaxConcurrent int
	// MaxShare is the part of MaxConcurrent one Receiver, and all the
	// Receivers of one namespace, may hold (--receiver-max-share, at
	// least one call); more of theirs are answered 429. Zero is
	// DefaultMaxShare.
	MaxShare float64
	// BodyTimeout bounds the time a call's body takes to arrive once its
	// headers have (--receiver-body-timeout): a client that sends a body a
	// byte at a time is answered 408 and frees its slot. Zero is
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// NoCrossNamespaceRefs skips resources in another namespace than the
	// Receiver's (the Receiver reconciler also marks it not Ready).
	NoCrossNamespaceRefs bool
	// Events records what each valid call did.
	Events *events.Recorder
	Log    logr.Logger
	// Now returns the requestedAt value; time.Now when nil.
	Now func() time.Time

	once   sync.Once
	slots  chan struct{}
	shares *shares
}

// DefaultBodyTimeout is --receiver-body-timeout: a webhook's body is at
// most MaxBodySize, which any sender delivers in well under a second.
const DefaultBodyTimeout = 5 * time.Second

// NeedLeaderElection lets every replica serve.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	l, err := listen.Listen(s.Addr)
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

// Handler returns the HTTP handler: POST /hook/<id>, behind the
// concurrency cap and a panic guard.
func (s *Server) Handler() http.Handler {
	s.once.Do(func() {
		s.slots = make(chan struct{}, max(s.MaxConcurrent, 1))
		share := s.MaxShare
		if share <= 0 {
			share = DefaultMaxShare
		}
		s.shares = newShares(max(s.MaxConcurrent, 1), share)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/{id}", s.hook)
	mux.HandleFunc("/hook/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		s.answer(w, http.StatusMethodNotAllowed, "only POST")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, http.StatusNotFound, "not found")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			s.answer(w, http.StatusTooManyRequests, "too many concurrent calls")
			return
		}
		// A panic (the call is untrusted input) is answered 500, logged
		// with its stack and counted as plumb_panics_recovered_total{where="webhook"}.
		var err error
		defer func() {
			if err != nil {
				s.answer(w, http.StatusInternalServerError, "internal error")
			}
		}()
		defer panics.Recover(&err, "webhook")
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) answer(w http.ResponseWriter, code int, format string, args ...any) {
	requests.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

// hook handles one call. Everything before the signature check is read
// from memory (Tokens, the manager's cache): a forged call costs no API
// request.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	found, ok := s.Tokens.lookup("/hook/" + r.PathValue("id"))
	if !ok {
		s.answer(w, http.StatusNotFound, "not found")
		return
	}
	release, ok := s.shares.acquire(found.receiver)
	if !ok {
		w.Header().Set("Retry-After", "1")
		s.answer(w, http.StatusTooManyRequests, "this receiver, or its namespace, holds its share of the concurrent calls")
		return
	}
	defer release()
	var rcv notificationv1.Receiver
	if err := s.Client.Get(ctx, found.receiver, &rcv); err != nil {
		if apierrors.IsNotFound(err) {
			s.answer(w, http.StatusNotFound, "not found")
			return
		}
		s.Log.Error(err, "reading a receiver from the cache")
		s.answer(w, http.StatusInternalServerError, "internal error")
		return
	}
	log := s.Log.WithValues("receiver", rcv.Namespace+"/"+rcv.Name)
	if rcv.Spec.Suspend {
		s.answer(w, http.StatusServiceUnavailable, "receiver is suspended")
		return
	}
	if !conditions.IsReady(&rcv) {
		s.answer(w, http.StatusServiceUnavailable, "receiver is not ready")
		return
	}
	if !found.limiter.Allow() {
		w.Header().Set("Retry-After", "1")
		s.answer(w, http.StatusTooManyRequests, "rate limit of this receiver exceeded")
		return
	}

	bodyTimeout := s.BodyTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	// A slot is held while the body arrives: it gets BodyTimeout to.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodySize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.answer(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", MaxBodySize)
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.answer(w, http.StatusRequestTimeout, "the body did not arrive within %s", bodyTimeout)
			return
		}
		s.answer(w, http.StatusBadRequest, "reading the body failed")
		return
	}

	verdict, err := s.Verifier.Verify(ctx, Call{
		Type: rcv.Spec.Type, Events: rcv.Spec.Events, Secret: found.cred, OIDCProviders: rcv.Spec.OIDCProviders,
		Header: r.Header, Body: body,
	})
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

	keep, err := filterFor(&rcv, r.Header, body, verdict.Claims)
	if err != nil {
		s.answer(w, http.StatusBadRequest, "%v", err)
		return
	}
	requested, elsewhere, err := s.requestReconcile(ctx, &rcv, keep)
	var failed *filterError
	if errors.As(err, &failed) {
		s.answer(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err != nil {
		log.Error(err, "requesting reconciles")
		s.answer(w, http.StatusInternalServerError, "requesting reconciles failed")
		return
	}
	msg := requestedMessage(requested, elsewhere)
	if verdict.Event != "" {
		msg = fmt.Sprintf("%s event: %s", verdict.Event, msg)
	}
	if s.Events != nil {
		s.Events.Record(&rcv, events.SeverityInfo, notificationv1.ReconcileRequestedReason, msg,
			events.WithMetadata(map[string]string{"resources": strconv.Itoa(len(requested) + elsewhere)}))
	}
	log.V(1).Info("webhook accepted", "event", verdict.Event, "resources", requested, "otherNamespaces", elsewhere)
	s.answer(w, http.StatusOK, "%s", msg)
}

// requestedMessage names the resources of the Receiver's own namespace and
// only counts the others: the answer goes back to the caller and the event
// to whoever may read the Receiver, neither of whom is to learn the names
// of another namespace's objects.
func requestedMessage(requested []string, elsewhere int) string {
	var parts []string
	if len(requested) > 0 {
		parts = append(parts, strings.Join(requested, ", "))
	}
	switch elsewhere {
	case 0:
	case 1:
		parts = append(parts, "1 resource in another namespace")
	default:
		parts = append(parts, fmt.Sprintf("%d resources in other namespaces", elsewhere))
	}
	if len(parts) == 0 {
		return "no resource matched"
	}
	return "requested a reconcile of " + strings.Join(parts, " and ")
}

// SupportedKind reports whether a webhook can request a reconcile of kind.
// Those are the kinds that record a handled request (meta.Requestable),
// but notification-controller's own: a Git or registry push changes what
// the other controllers fetch and apply, never an Alert, Provider or
// Receiver, which a person reconciles (plumb reconcile).
func SupportedKind(kind string) bool {
	_, ok := requestable(kind)
	return ok
}

// requestable is the kind named exactly kind, when a webhook may request
// its reconcile.
func requestable(kind string) (kinds.Kind, bool) {
	k, ok := kinds.Lookup(kind)
	return k, ok && k.GVK.Kind == kind && k.Requestable() && !slices.Contains(k.Controllers, kinds.NotificationController)
}

// keepFunc decides whether a resolved resource is annotated; nil annotates
// every one.
type keepFunc func(ctx context.Context, obj *metav1.PartialObjectMetadata) (bool, error)

// filterError is a spec.resourceFilter that failed on a call: the call is
// answered 400 and nothing is annotated.
type filterError struct{ err error }

func (e *filterError) Error() string { return "spec.resourceFilter: " + e.err.Error() }

// filterFor returns the Receiver's spec.resourceFilter over the call's
// body (and a generic-oidc call's claims), or nil without one. Compiling costs nothing after the first call
// (celexpr caches programs); the reconciler has refused an expression that
// does not compile.
func filterFor(rcv *notificationv1.Receiver, header http.Header, body []byte, claims map[string]any) (keepFunc, error) {
	if rcv.Spec.ResourceFilter == "" {
		return nil, nil
	}
	prog, err := CompileFilter(rcv.Spec.ResourceFilter, rcv.Spec.Type)
	if err != nil {
		return nil, err
	}
	req, err := filterRequest(header, body)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, obj *metav1.PartialObjectMetadata) (bool, error) {
		res, err := resourceVar(obj)
		if err != nil {
			return false, err
		}
		vars := map[string]any{"res": res, "req": req}
		if rcv.Spec.Type == notificationv1.GenericOIDCReceiver {
			vars["claims"] = claims
		}
		return prog.Bool(ctx, vars)
	}, nil
}

// filterTimeout bounds the filtering of one call's resources.
const filterTimeout = 5 * time.Second

// target is one resource to annotate.
type target struct {
	gvk      schema.GroupVersionKind
	ns, name string
}

// requestReconcile sets the requestedAt annotation on every resource the
// Receiver names that keep passes (all when keep is nil). It returns
// those of the Receiver's namespace as Kind/name, and how many it
// annotated in other namespaces. With NoCrossNamespaceRefs, references to
// other namespaces are skipped. Every resource is resolved and filtered
// before the first is annotated, so a filter that fails (a *filterError)
// annotates nothing.
func (s *Server) requestReconcile(ctx context.Context, rcv *notificationv1.Receiver, keep keepFunc) (local []string, elsewhere int, err error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	value := now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{meta.ReconcileRequestAnnotation: value}}})
	if err != nil {
		return nil, 0, err
	}
	var targets []target
	// Filtering a call's resources gets filterTimeout in all: each
	// evaluation is bounded by its cost, their number by the resources.
	filterCtx, cancel := context.WithTimeout(ctx, filterTimeout)
	defer cancel()
	for _, ref := range rcv.Spec.Resources {
		k, ok := requestable(ref.Kind)
		if !ok {
			continue // the reconciler reports it as an invalid spec
		}
		gvk := k.GVK
		ns := ref.Namespace
		if ns == "" {
			ns = rcv.Namespace
		}
		if ns != rcv.Namespace && s.NoCrossNamespaceRefs {
			continue // the reconciler reports it
		}
		objs, err := s.resolve(ctx, gvk, ns, ref, keep != nil)
		if err != nil {
			return nil, 0, err
		}
		for i := range objs {
			if keep != nil {
				ok, err := keep(filterCtx, &objs[i])
				if err != nil {
					return nil, 0, &filterError{err: err}
				}
				if !ok {
					continue
				}
			}
			targets = append(targets, target{gvk: gvk, ns: ns, name: objs[i].Name})
		}
	}
	for _, t := range targets {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(t.gvk)
		obj.SetNamespace(t.ns)
		obj.SetName(t.name)
		if err := s.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return local, elsewhere, fmt.Errorf("annotating %s %s/%s: %w", t.gvk.Kind, t.ns, t.name, err)
		}
		if t.ns == rcv.Namespace {
			local = append(local, t.gvk.Kind+"/"+t.name)
		} else {
			elsewhere++
		}
	}
	return local, elsewhere, nil
}

// resolve returns the resources a reference stands for: the one it names,
// or for a name with '*' the objects whose names match and that carry
// matchLabels. With withMeta, a named resource is read (its metadata, for
// a filter; one that does not exist is left out); else only its name is
// set.
func (s *Server) resolve(ctx context.Context, gvk schema.GroupVersionKind, ns string, ref notificationv1.CrossNamespaceObjectReference, withMeta bool) ([]metav1.PartialObjectMetadata, error) {
	if !strings.Contains(ref.Name, "*") {
		obj := metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace(ns)
		obj.SetName(ref.Name)
		if withMeta {
			if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(&obj), &obj); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, nil
				}
				return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, ns, ref.Name, err)
			}
			obj.SetGroupVersionKind(gvk)
		}
		return []metav1.PartialObjectMetadata{obj}, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := s.Reader.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(ref.MatchLabels)}); err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, ns, err)
	}
	var out []metav1.PartialObjectMetadata
	for _, item := range list.Items {
		if ref.MatchesName(item.Name) {
			// A list's items say PartialObjectMetadata; res says the kind.
			item.SetGroupVersionKind(gvk)
			out = append(out, item)
		}
	}
	return out, nil
}
