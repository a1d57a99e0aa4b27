package workloads

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/podlogs"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/kinds"
)

// MaxFollow is how long one followed log stays open: a page left open
// does not hold a stream to a kubelet for ever; the page offers to follow
// again.
var MaxFollow = 10 * time.Minute

// MaxFollows is how many followed logs one session may hold at once.
const MaxFollows = 4

// apiTimeout bounds the API calls of a request (tests shorten it).
var apiTimeout = httpapi.APITimeout

// Routes registers the routes of the package doc on mux, behind the
// server's session and CSRF checks.
func Routes(mux *http.ServeMux) {
	h := &handlers{follows: map[*access.Session]int{}}
	mux.HandleFunc("GET /api/objects/{kind}/{namespace}/{name}/pod", h.pod)
	mux.HandleFunc("GET /api/objects/{kind}/{namespace}/{name}/logs", h.logs)
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/resources/{action}", h.action)
}

type handlers struct {
	mu      sync.Mutex
	follows map[*access.Session]int
}

// target is one request's application and the user's clients.
type target struct {
	session *access.Session
	client  client.Client
	cs      kubernetes.Interface
	applied *inspect.Applied
}

// application reads the Kustomization or HelmRelease the route names
// with the user's client. On failure it has written the answer.
func application(ctx context.Context, w http.ResponseWriter, r *http.Request) (*target, bool) {
	s := access.From(r)
	if s == nil {
		httpapi.Error(w, http.StatusUnauthorized, "sign in first")
		return nil, false
	}
	k, ok := kinds.Lookup(r.PathValue("kind"))
	if !ok || k.Route() != r.PathValue("kind") {
		httpapi.Error(w, http.StatusNotFound, "no kind %q here", r.PathValue("kind"))
		return nil, false
	}
	obj := k.New()
	if _, applies := inspect.AppliedOf(obj); !applies {
		httpapi.Error(w, http.StatusNotFound, "a %s has no workloads: only a Kustomization's or a HelmRelease's", k.GVK.Kind)
		return nil, false
	}
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := s.Client().Get(ctx, key, obj); err != nil {
		httpapi.APIError(w, err)
		return nil, false
	}
	cs, err := kubernetes.NewForConfig(s.Config())
	if err != nil {
		httpapi.APIError(w, err)
		return nil, false
	}
	a, _ := inspect.AppliedOf(obj)
	return &target{session: s, client: s.Client(), cs: cs, applied: a}, true
}

// objectID reads the id query parameter or body field: pkg/object's ID
// text of an object with a namespace.
func objectID(w http.ResponseWriter, text string) (object.ID, bool) {
	id, err := object.ParseText(text)
	if err == nil && id.Namespace == "" {
		err = fmt.Errorf("%q names no namespace", text)
	}
	if err == nil && len(validation.IsDNS1123Subdomain(id.Name)) > 0 {
		err = fmt.Errorf("name %q is not a DNS subdomain", id.Name)
	}
	if err != nil {
		httpapi.Error(w, http.StatusBadRequest, "id: %v", err)
		return object.ID{}, false
	}
	return id, true
}

// podOf reads the Pod id names, as the user, and checks it is in the
// application's tree. On failure it has written the answer.
func (t *target) podOf(ctx context.Context, w http.ResponseWriter, text string) (*corev1.Pod, bool) {
	id, ok := objectID(w, text)
	if !ok {
		return nil, false
	}
	if id.Group != "" || id.Kind != "Pod" {
		httpapi.Error(w, http.StatusBadRequest, "id: %s is not a Pod", text)
		return nil, false
	}
	pod := &corev1.Pod{}
	if err := t.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, pod); err != nil {
		httpapi.APIError(w, err)
		return nil, false
	}
	in, err := podlogs.BelongsTo(ctx, t.client, t.applied.Object, pod)
	if err != nil {
		httpapi.APIError(w, err)
		return nil, false
	}
	if !in {
		httpapi.Error(w, http.StatusNotFound, "Pod %s/%s is not in the tree of %s %s/%s", pod.Namespace, pod.Name,
			t.applied.Kind, t.applied.Object.GetNamespace(), t.applied.Object.GetName())
		return nil, false
	}
	return pod, true
}

// podPage is the answer of GET …/pod: what the log view offers.
type podPage struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	Phase      string      `json:"phase"`
	Node       string      `json:"node,omitempty"`
	Containers []container `json:"containers"`
	// Bounds are the log view's limits, for the page to say.
	Bounds bounds `json:"bounds"`
}

type container struct {
	Name string `json:"name"`
	Init bool   `json:"init,omitempty"`
	// Restarts counts the container's restarts: a previous log exists
	// once it is above zero.
	Restarts int32  `json:"restarts"`
	State    string `json:"state,omitempty"`
}

type bounds struct {
	DefaultTail int64  `json:"defaultTail"`
	MaxTail     int64  `json:"maxTail"`
	MaxBytes    int64  `json:"maxBytes"`
	MaxFollow   string `json:"maxFollow"`
}

func (h *handlers) pod(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancel()
	t, ok := application(ctx, w, r)
	if !ok {
		return
	}
	pod, ok := t.podOf(ctx, w, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	page := podPage{Namespace: pod.Namespace, Name: pod.Name, Phase: string(pod.Status.Phase), Node: pod.Spec.NodeName,
		Containers: []container{},
		Bounds:     bounds{DefaultTail: podlogs.DefaultTail, MaxTail: podlogs.MaxTail, MaxBytes: podlogs.MaxBytes, MaxFollow: MaxFollow.String()}}
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		statuses[s.Name] = s
	}
	inits := len(pod.Spec.InitContainers)
	for i, name := range podlogs.Containers(pod) {
		c := container{Name: name, Init: i < inits}
		if s, ok := statuses[name]; ok {
			c.Restarts = s.RestartCount
			c.State = stateOf(s.State)
		}
		page.Containers = append(page.Containers, c)
	}
	httpapi.JSON(w, http.StatusOK, page)
}

func stateOf(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "Running"
	case s.Waiting != nil:
		return "Waiting: " + s.Waiting.Reason
	case s.Terminated != nil:
		return "Terminated: " + s.Terminated.Reason
	}
	return ""
}

// logs serves GET …/logs: one container's log as text/plain, a line at a
// time; with follow=true it stays open for new lines until MaxFollow, the
// end of the session, or the page leaving.
func (h *handlers) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := podlogs.Request{Container: q.Get("container"), Previous: q.Get("previous") == "true", Follow: q.Get("follow") == "true"}
	if s := q.Get("tail"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < -1 {
			httpapi.Error(w, http.StatusBadRequest, "tail %q: want a count of lines, or -1 for all (at most %d bytes)", s, podlogs.MaxBytes)
			return
		}
		req.Tail = &n
	}
	setup, cancelSetup := httpapi.WithAPITimeout(r, apiTimeout)
	defer cancelSetup()
	t, ok := application(setup, w, r)
	if !ok {
		return
	}
	pod, ok := t.podOf(setup, w, q.Get("id"))
	if !ok {
		return
	}
	if req.Container == "" {
		req.Container = firstContainer(pod)
	}
	// The read: bounded by apiTimeout to its first byte, then by
	// MaxFollow (a follow) and the session.
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	if req.Follow {
		if !h.startFollow(t.session) {
			cancel()
			httpapi.Error(w, http.StatusTooManyRequests, "at most %d followed logs at once: close one first", MaxFollows)
			return
		}
		defer h.endFollow(t.session)
		cancel()
		ctx, cancel = context.WithTimeout(r.Context(), MaxFollow)
		// The server's write timeout bounds every other answer; a
		// follow's bound is MaxFollow (and the read timeout bounds
		// reading a request, not how long it is served).
		rc := http.NewResponseController(w)
		if err := errors.Join(rc.SetWriteDeadline(time.Now().Add(MaxFollow+time.Minute)), rc.SetReadDeadline(time.Time{})); err != nil {
			cancel()
			httpapi.Error(w, http.StatusInternalServerError, "this connection cannot stream: %v", err)
			return
		}
	}
	defer cancel()
	go func() {
		select {
		case <-t.session.Ended():
			cancel()
		case <-ctx.Done():
		}
	}()
	rc, err := t.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, req.Options()).Stream(ctx)
	if err != nil {
		httpapi.APIError(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(w).Flush
	// Lines are written as they come; the kubelet's limitBytes ends the
	// stream after podlogs.MaxBytes, and written counts it here too.
	written := 0
	_ = podlogs.Lines(rc, func(line string) bool {
		if written+len(line)+1 > podlogs.MaxBytes {
			return false
		}
		n, err := fmt.Fprintln(w, line)
		written += n
		if err != nil {
			return false
		}
		// A followed line is sent at once; a tail goes out as the
		// writer's buffer fills.
		return !req.Follow || flush() == nil
	})
}

// firstContainer is the container kubectl picks when none is named: the
// default-container annotation's, else the first (not an init one).
func firstContainer(pod *corev1.Pod) string {
	if name := pod.Annotations["kubectl.kubernetes.io/default-container"]; name != "" {
		return name
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

func (h *handlers) startFollow(s *access.Session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.follows[s] >= MaxFollows {
		return false
	}
	h.follows[s]++
	return true
}

func (h *handlers) endFollow(s *access.Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.follows[s]--; h.follows[s] <= 0 {
		delete(h.follows, s)
	}
}
