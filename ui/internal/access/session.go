package access

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/ui/internal/kinds"
)

// ReviewTTL is how long the answer of an access review is kept: a change
// of RBAC shows within a minute, and a page of 1,000 rows costs a handful
// of reviews, not one per row per request.
const ReviewTTL = time.Minute

// maxReviews bounds the reviews one session keeps, rather than memory
// growing with every object a user's pages ask about.
const maxReviews = 4096

// MaxCachedReviews bounds the reviews kept by all sessions together:
// sessions times maxReviews would be tens of millions. Past it a session
// first forgets its own expired answers, and if the room is still taken,
// asks without keeping the answer.
const MaxCachedReviews = 100_000

// cachedReviews counts the reviews every session of the process keeps.
var cachedReviews atomic.Int64

// Session is one signed-in user: who they are, the client that acts as
// them, and their cached access reviews.
type Session struct {
	user   string
	groups []string
	mode   Mode
	config *rest.Config
	client client.Client

	// Set by the Gate for sessions it issued.
	id      string
	csrf    string
	expires time.Time

	mu      sync.Mutex
	reviews map[review]verdict
	// ended is set when the Gate let go of the session: a request still
	// in flight keeps no more answers, which nothing would release.
	ended bool
	// endedCh is closed then, for the requests that last (Ended).
	endedCh chan struct{}
	now     func() time.Time
}

// Ended is closed once the session ends: signed out, expired and
// noticed, or ended by a newer sign-in of its user. A request that lasts
// (the live stream) ends with it.
func (s *Session) Ended() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endedCh == nil {
		s.endedCh = make(chan struct{})
		if s.ended {
			close(s.endedCh)
		}
	}
	return s.endedCh
}

// Expires is when the session ends at the latest; zero for a session the
// Gate did not issue.
func (s *Session) Expires() time.Time { return s.expires }

// review is one question asked of the API server.
type review struct {
	verb, group, resource, namespace, name string
}

type verdict struct {
	allowed bool
	at      time.Time
}

// NewSession returns a session of user that acts with cfg (which must hold
// that user's credentials and nothing else). The client uses scheme and
// mapper, the server's, so that a user who may not read discovery still
// gets a working client. The Gate makes sessions at sign-in; tests of the
// UI's handlers make them directly and put them in a request's context
// with WithSession.
func NewSession(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, mode Mode, user string, groups []string) (*Session, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	return &Session{user: user, groups: groups, mode: mode, config: cfg, client: c,
		reviews: map[review]verdict{}, now: time.Now}, nil
}

// User is the user's name as the API server knows it
// ("system:serviceaccount:team-a:viewer").
func (s *Session) User() string { return s.user }

// Groups are the user's groups as the API server knows them.
func (s *Session) Groups() []string { return append([]string(nil), s.groups...) }

// Mode is how the user signed in.
func (s *Session) Mode() Mode { return s.mode }

// Client reads and writes as the user.
func (s *Session) Client() client.Client { return s.client }

// Config is a copy of the user's rest.Config, for clients the controller-
// runtime client does not cover (a discovery or dynamic client, a dry-run
// apply).
func (s *Session) Config() *rest.Config { return rest.CopyConfig(s.config) }

// MayDo reports whether the user may verb the resource (of group) named
// name in namespace; an empty name means any object, an empty namespace
// all namespaces. The answer comes from a SelfSubjectAccessReview made as
// the user, kept for ReviewTTL. A review that fails is a "no", and is not
// kept.
func (s *Session) MayDo(ctx context.Context, verb, group, resource, namespace, name string) bool {
	key := review{verb, group, resource, namespace, name}
	now := s.now()
	s.mu.Lock()
	v, ok := s.reviews[key]
	s.mu.Unlock()
	if ok && now.Sub(v.at) < ReviewTTL {
		return v.allowed
	}
	sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: namespace, Name: name,
		},
	}}
	if err := s.client.Create(ctx, sar); err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return sar.Status.Allowed // a request still in flight: nothing to keep it for
	}
	if _, kept := s.reviews[key]; !kept && (len(s.reviews) >= maxReviews || cachedReviews.Load() >= MaxCachedReviews) {
		s.forget()
	}
	if _, kept := s.reviews[key]; !kept {
		if cachedReviews.Load() >= MaxCachedReviews {
			return sar.Status.Allowed // answered, not kept: the room is others'
		}
		cachedReviews.Add(1)
	}
	s.reviews[key] = verdict{allowed: sar.Status.Allowed, at: now}
	return sar.Status.Allowed
}

// release forgets every review s keeps, for a session that ended.
func (s *Session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cachedReviews.Add(-int64(len(s.reviews)))
	clear(s.reviews)
	if s.endedCh != nil && !s.ended {
		close(s.endedCh)
	}
	s.ended = true
}

// MayGet reports whether the user may get the object: asked first of the
// whole namespace (one cached review serves every object there, as for a
// user with a namespace's viewer role), then of the object by name (a
// role that names resourceNames). Event streams ask it of every object
// they would show, so this keeps them to a review per namespace.
func (s *Session) MayGet(ctx context.Context, group, resource, namespace, name string) bool {
	return s.MayDo(ctx, "get", group, resource, namespace, "") || s.MayDo(ctx, "get", group, resource, namespace, name)
}

// MayGetObject is MayGet for a Plumb object named by its Kind, as an
// event's involved object or a change names it ("Kustomization"). A kind
// the UI does not know (package kinds) is a "no": nothing is shown of an
// object whose access cannot be checked.
func (s *Session) MayGetObject(ctx context.Context, kind, namespace, name string) bool {
	k, ok := kinds.LookupAny(kind)
	return ok && s.MayGet(ctx, k.Group(), k.Resource, namespace, name)
}

// forget makes room: it drops the expired answers, and when that does not
// free half of the room, all of them (each is asked again at most once).
// Called with mu held.
func (s *Session) forget() {
	now := s.now()
	before := len(s.reviews)
	for k, v := range s.reviews {
		if now.Sub(v.at) >= ReviewTTL {
			delete(s.reviews, k)
		}
	}
	if len(s.reviews) > maxReviews/2 {
		clear(s.reviews)
	}
	cachedReviews.Add(-int64(before - len(s.reviews)))
}

type sessionKey struct{}

// WithSession returns ctx carrying s.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// From returns the session of a request that Gate.Protect let through (or
// that a test put there with WithSession); nil for any other request.
func From(r *http.Request) *Session {
	s, _ := r.Context().Value(sessionKey{}).(*Session)
	return s
}
