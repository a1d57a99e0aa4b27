// Package e2e holds the end-to-end tests that run the whole Plumb suite
// (all four controllers as processes, a real API server with
// kube-controller-manager, NATS and a Git server) and check the story from a
// pushed commit to a synced cluster.
//
// TestMain builds the four controllers and plumb from the checkout into a
// temporary folder (PLUMB_E2E_BIN_DIR names a folder of prebuilt ones
// instead) and starts one environment with plumb.dev/e2e/localenv, the same
// one `make run` starts (its registry with the sample's images included), with the tenancy flags deploy/ sets
// (localenv.TenancyArgs: --no-cross-namespace-refs, and sync-controller's
// --default-service-account=default, so every Kustomization acts as a
// ServiceAccount: the sample's names one with the rights it needs, and so
// do the stories' own). Each test deploys its own
// copy of the sample in deploy/examples (its own repository and namespaces)
// and pushes commits with the git binary; the Helm story serves its chart
// from a chart repository of its own on 127.0.0.1, the OCI story its
// artifacts from a registry of its own:
//
//	TestPushWebhookToReady               push → signed webhook → Receiver → artifact → render → apply → Ready
//	TestForeignEditRevertedAndAlerted    a foreign edit is reverted; the Slack stand-in gets the drifted path
//	TestDeletedObjectPruned              a commit deleting an object prunes it
//	TestBrokenCommitKeepsPreviousRevision  a commit that does not build: Ready=False, nothing deleted
//	TestEmptyCommitIsHeldUntilConfirmed  `resources: []`: PruneGuarded, nothing deleted, one alert; confirmed, it prunes
//	TestSyncControllerKilledMidSync      SIGKILL during the PreSync hook, restart, convergence
//	TestAKilledControllerIsRestartedOnItsPorts  the launcher restarts a dead controller with backoff, same ports
//	TestTheTryCommandsWork               every command of the launcher's "Try:" list succeeds as printed
//	TestAutoscalerFightEndsInDriftContested  a HorizontalPodAutoscaler against Git's replicas: DriftContested, one alert
//	TestHelmReleaseFromAChartRepository  a chart from an HTTP chart repository (pkg/testhelm), values from a
//	                                     Secret: install (pre-install hook), version bump (pre- and
//	                                     post-upgrade hooks, an object pruned), new values, a foreign edit
//	                                     reverted, uninstall (the objects and the HelmChart gone)
//	TestHelmReleaseLifecycleWithHelmsHistory  install, an upgrade that never becomes available rolled
//	                                     back automatically, a fixed upgrade; `helm history` (the helm
//	                                     CLI, bin/helm) shows the four revisions from Helm's storage
//	TestOCIArtifactPushedAndApplied      `plumb push artifact` into an in-process OCI registry (credentials);
//	                                     an OCIRepository's semver range, a Kustomization applying it; a newer
//	                                     tag taken on `plumb reconcile source oci` (a value changed, an object
//	                                     pruned), a tag outside the range left alone
//	TestTenantsStayInsideTheirNamespaces  two tenants: a ServiceAccount's Kustomization refused in the other's
//	                                     namespace and at cluster scope, nothing created; cross-namespace sourceRef,
//	                                     Receiver resource and Alert source refused; A's Alert never gets B's events
//	TestATenantsDefaultServiceAccountBoundsItsKustomization  Kustomizations without serviceAccountName act as
//	                                     the namespace's default ServiceAccount: a ClusterRole refused and not
//	                                     created, a ConfigMap it was granted applied
//	TestFluxReferenceRepositoryReachesReady  Flux's flux2-kustomize-helm-example (testdata/flux-reference)
//	                                     with only its apiVersions changed, bootstrapped with Plumb's
//	                                     GitRepository and Kustomization: the ArtifactGenerator, the
//	                                     Kustomizations in dependsOn order and the HelmReleases (a chart
//	                                     repository's, an OCI registry's) Ready, values and patches applied
//	                                     (docs/design/flux.md, "Flux's reference repository")
//	TestPlumbInstalledByItsCLIRunsAsPodsOnARealNode  on a real node of its own (skipped without one): `plumb
//	                                     install` of deploy/'s images, built here, as Pods (NATS too); the sample
//	                                     reconciled by them; sync-controller's Pod deleted, a new one Ready that
//	                                     corrects a drift (docs/design/node.md, "Plumb as Pods")
//	TestPlumbBootstrappedFromGitManagesItselfOnARealNode  on a real node of its own (skipped without one):
//	                                     `plumb bootstrap git --allowed-private-networks` against the launcher's
//	                                     Git server; the controllers as Pods apply their own Deployments from
//	                                     Git; bootstrap again commits nothing; a commit adding a flag to
//	                                     render-controller rolls its Pod over (docs/install.md, bootstrap)
//	TestANewImageTagRollsOutThroughAGitCommit  the launcher's image "Try:" commands (`plumb tag image` in
//	                                     its registry, the registry's push webhook): the ImagePolicy picks the
//	                                     tag, the automation commits it as its author, signed, pushed with the
//	                                     GitRepository's credentials, the tag its only change; the Kustomization
//	                                     applies it and the Deployment runs the new tag
//
// The tests run one after another (one kills sync-controller) and every wait
// is bounded. They need bin/k8s from `make controlplane-assets`; `make e2e`
// runs them alone, `make test` with everything else.
package e2e
