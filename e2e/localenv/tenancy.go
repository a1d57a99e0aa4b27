package localenv

// TenancyArgs returns, by controller, the flags deploy/ starts the
// controllers with that bound what a tenant may do (deploy/README.md,
// "Tenants"; docs/design/tenancy.md): no reference across namespaces, and
// a Kustomization or HelmRelease without spec.serviceAccountName acting
// as its namespace's ServiceAccount "default" rather than as
// sync-controller. The e2e tests and plumb-local add them to
// Options.ControllerArgs, so the stories and the sample run with the
// rights they would have in an install; TestTenancyArgsAreDeploys checks
// that deploy/ sets the same.
func TenancyArgs() map[string][]string {
	return map[string][]string{
		SourceController:       {"--no-cross-namespace-refs"},
		RenderController:       {"--no-cross-namespace-refs"},
		SyncController:         {"--no-cross-namespace-refs", "--default-service-account=default"},
		NotificationController: {"--no-cross-namespace-refs"},
		ImageController:        {"--no-cross-namespace-refs"},
	}
}
