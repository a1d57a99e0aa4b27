package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/testhelm"
)

// The chart both sides install: one small application, a Deployment, its
// Service and its ConfigMap. The values change of the upgrade (message)
// changes the ConfigMap and, through a checksum annotation, the Pod
// template, so the upgrade rolls the Deployment out as a real values
// change does, and both sides wait for the new Pods.
const (
	chartName    = "bench-app"
	chartVersion = "1.0.0"
	// The values of the install and of the upgrade.
	installMessage = "hello"
	upgradeMessage = "hello again"
	// replicas is what the chart declares; drift sets driftReplicas.
	replicas      = 1
	driftReplicas = 2
)

// The Service is headless: envtest's service CIDR holds 254 addresses,
// and the bench makes three Services per release slot (both sides and the
// floor).
var chartFiles = testhelm.Files{
	"values.yaml": fmt.Sprintf("replicaCount: %d\nmessage: %q\nimage: registry.example/web:1.0\n", replicas, installMessage),
	"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: {{ .Release.Name }}
data:
  message: {{ .Values.message | quote }}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
    - name: http
      port: 80
      targetPort: 8080
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: web
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
        app.kubernetes.io/instance: {{ .Release.Name }}
      annotations:
        checksum/config: {{ .Values.message | sha256sum }}
    spec:
      containers:
        - name: web
          image: {{ .Values.image }}
          ports:
            - containerPort: 8080
`,
}

// benchChart is the chart, packaged the same way for both sides.
var benchChart = testhelm.Chart{Name: chartName, Version: chartVersion, Files: chartFiles}

// floorObjects are the chart's three objects of one release as the bench
// writes them itself in the floor: the same kinds and specs, without the
// checksum (the floor writes each object once).
func floorObjects(ns, release string) []*unstructured.Unstructured {
	labels := map[string]any{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": release}
	obj := func(apiVersion, kind, name string, rest map[string]any) *unstructured.Unstructured {
		m := map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}}
		for k, v := range rest {
			m[k] = v
		}
		return &unstructured.Unstructured{Object: m}
	}
	return []*unstructured.Unstructured{
		obj("v1", "ConfigMap", release+"-config", map[string]any{"data": map[string]any{"message": installMessage}}),
		obj("v1", "Service", release+"-web", map[string]any{"spec": map[string]any{"clusterIP": "None", "selector": labels,
			"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}}),
		obj("apps/v1", "Deployment", release+"-web", map[string]any{"spec": map[string]any{"replicas": int64(replicas),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "registry.example/web:1.0", "ports": []any{map[string]any{"containerPort": int64(8080)}}}}}}}}),
	}
}
