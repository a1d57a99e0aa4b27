package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/pkg/object"
)

// ForbiddenError is a request the API server refused for lack of rights:
// who asked, for which verb, on which resource, where.
type ForbiddenError struct {
	// ID is the object the request was about.
	ID object.ID
	// User is who the API server saw: "ServiceAccount <ns>/<name>" for a
	// ServiceAccount, otherwise the user name.
	User string
	// Verb is the refused verb (get, patch, delete, impersonate…).
	Verb string
	// Resource is the refused resource, with its group when it has one
	// (configmaps, clusterroles.rbac.authorization.k8s.io).
	Resource string
	// Namespace of the request; empty at cluster scope.
	Namespace string
	// Name is the name the refused request was for, when the API server
	// said (the ServiceAccount of a refused impersonation).
	Name string
	Err  error
}

func (e *ForbiddenError) Error() string {
	switch {
	case e.Verb == "impersonate" && e.Name != "":
		return fmt.Sprintf("%s: %s may not impersonate ServiceAccount %s/%s: grant it the impersonate verb on serviceaccounts",
			e.ID, e.User, e.Namespace, e.Name)
	case strings.HasPrefix(e.Verb, "impersonate"):
		// Constrained impersonation (Kubernetes 1.34+) reports the verb as
		// impersonate-on:<kind>:<verb> on the resource requested.
		return fmt.Sprintf("%s: %s may not impersonate the Kustomization's ServiceAccount (refused %s on %s %s): grant it the impersonate verb on serviceaccounts",
			e.ID, e.User, e.Verb, e.Resource, e.where())
	}
	hint := ""
	if e.Verb == "patch" {
		hint = " (server-side apply)"
	}
	return fmt.Sprintf("%s: forbidden: %s may not %s %s %s%s", e.ID, e.User, e.Verb, e.Resource, e.where(), hint)
}

func (e *ForbiddenError) where() string {
	if e.Namespace == "" {
		return "at cluster scope"
	}
	return "in namespace " + e.Namespace
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// forbiddenMessage matches the API server's refusal text (apiserver's
// responsewriters.forbiddenMessage), which is the only place it says who
// was refused which verb.
var forbiddenMessage = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

// Forbidden translates a Forbidden API error about the object id into a
// ForbiddenError, whose message names the object, the identity and the
// refused verb; it returns nil for any other error. A refusal the message
// of which cannot be parsed keeps the API server's own words.
func Forbidden(id object.ID, err error) error {
	if !apierrors.IsForbidden(err) {
		return nil
	}
	var fe *ForbiddenError
	if errors.As(err, &fe) {
		return fe
	}
	m := forbiddenMessage.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	resource := m[3]
	if m[4] != "" {
		resource += "." + m[4]
	}
	out := &ForbiddenError{ID: id, User: userName(m[1]), Verb: m[2], Resource: resource, Namespace: m[5], Err: err}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		out.Name = status.Status().Details.Name
	}
	return out
}

// userName shows a ServiceAccount's user name as "ServiceAccount <ns>/<name>".
func userName(user string) string {
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok {
			return ServiceAccountUser(types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	return "user " + user
}

// ServiceAccountUser is ForbiddenError.User for a ServiceAccount.
func ServiceAccountUser(sa types.NamespacedName) string {
	return "ServiceAccount " + sa.Namespace + "/" + sa.Name
}
