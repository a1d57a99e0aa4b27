package notifier

// pagingKinds are the paging and incident tools: alertmanager, pagerduty,
// opsgenie, grafana, datadog, sentry.
var pagingKinds = map[string]kind{}
