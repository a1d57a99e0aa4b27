package notifier

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// pagingKinds are the paging and incident tools: alertmanager, pagerduty,
// opsgenie, grafana, datadog, sentry, incident.io, and otel's traces. Each speaks its service's own API
// (alertmanager.go, pagerduty.go, ...) through Config.send.
var pagingKinds = map[string]kind{
	notificationv1.AlertmanagerProvider: {build: newAlertmanager},
	notificationv1.PagerDutyProvider:    {build: newPagerDuty, defaultAddress: "https://events.pagerduty.com"},
	notificationv1.OpsgenieProvider:     {build: newOpsgenie, defaultAddress: "https://api.opsgenie.com/v2/alerts", token: opsgenieToken},
	notificationv1.GrafanaProvider:      {build: newGrafana},
	notificationv1.DatadogProvider:      {build: newDatadog, defaultAddress: "https://api.datadoghq.com", token: datadogToken},
	notificationv1.SentryProvider:       {build: newSentry},
	notificationv1.IncidentioProvider:   {build: newIncidentio, token: incidentioTokenNeed},
	notificationv1.OTELProvider:         {build: otelKind},
}

// successReasons are the info reasons that report an object working again
// after a failure: a sync that applied or pruned, health recovered, a Helm
// release that succeeded, a source that produced its artifact, a render
// stored, drift reverted, a field fight over. The incident tools close
// the object's open incident on them (pagerduty, opsgenie) or mark the
// event a success (datadog). Other info events (Progressing, HookStarted,
// a reconcile request, ...) report progress, not an outcome.
var successReasons = map[string]bool{
	meta.SucceededReason:                true,
	kustomizev1.AppliedReason:           true,
	kustomizev1.PrunedReason:            true,
	kustomizev1.HealthRecoveredReason:   true,
	kustomizev1.RenderedReason:          true,
	kustomizev1.DriftCorrectedReason:    true,
	kustomizev1.DriftContestEndedReason: true,
	helmv2.InstallSucceededReason:       true,
	helmv2.UpgradeSucceededReason:       true,
	sourcev1.NewArtifactReason:          true,
	sourcev1.ArtifactRebuiltReason:      true,
}

// outcome is what an event means to an incident tool.
type outcome int

const (
	// progress is an info event that reports no outcome.
	progress outcome = iota
	// failure is an error event: an incident opens, or stays open.
	failure
	// recovery is an info event of a success reason: the object's
	// incident, if any, is over.
	recovery
)

func outcomeOf(e events.Event) outcome {
	switch {
	case e.Severity == events.SeverityError:
		return failure
	case successReasons[e.Reason]:
		return recovery
	default:
		return progress
	}
}

// incidentKey names the object an event is about, the same for all its
// events, so that a recovery closes the incident its failure opened
// (PagerDuty's dedup_key, Opsgenie's alias, Datadog's aggregation key). A
// key longer than limit is replaced by a digest of it: still one per
// object.
func incidentKey(e events.Event, limit int) string {
	o := e.InvolvedObject
	parts := []string{"plumb", strings.ToLower(o.Kind)}
	if o.Namespace != "" {
		parts = append(parts, o.Namespace)
	}
	key := strings.Join(append(parts, o.Name), ":")
	if len(key) <= limit {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "plumb:" + hex.EncodeToString(sum[:])[:min(64, limit-len("plumb:"))]
}

// bearerOrBasic authenticates with the token as a bearer token, or else
// with the Secret's username and password (alertmanager, grafana).
func bearerOrBasic(cfg Config) http.Header {
	switch {
	case cfg.Token != "":
		return bearerAuth(cfg.Token)
	case cfg.User != "" || cfg.Password != "":
		return http.Header{"Authorization": {basicCredentials(cfg.User, cfg.Password)}}
	}
	return nil
}

// What the token of the types that need one is.
const (
	opsgenieToken = "an Opsgenie API integration key"
	datadogToken  = "a Datadog API key"
)

// joinPath appends a path to an address that names a service's base URL,
// unless the address names the endpoint already.
func joinPath(address, path string) string {
	trimmed := strings.TrimSuffix(address, "/")
	if strings.HasSuffix(trimmed, path) {
		return trimmed
	}
	return trimmed + path
}

// stableMetadataKeys are the event's metadata keys that identify its news
// (the Alert's eventMetadata, a controller's counts), sorted: neither the
// summary, which the services show on its own, nor the volatile keys,
// which differ between repeats and would split one news into many.
func stableMetadataKeys(e events.Event) []string {
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		if k != SummaryKey && !strings.HasPrefix(k, events.VolatilePrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
