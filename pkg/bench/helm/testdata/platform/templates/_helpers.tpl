{{/* Expand the name of the chart. */}}
{{- define "platform.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* A fully qualified app name, truncated at 63 characters. */}}
{{- define "platform.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of one component: fullname-component. */}}
{{- define "platform.componentName" -}}
{{- printf "%s-%s" (include "platform.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "platform.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of a component. */}}
{{- define "platform.selectorLabels" -}}
app.kubernetes.io/name: {{ include "platform.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Common labels of a component. */}}
{{- define "platform.labels" -}}
helm.sh/chart: {{ include "platform.chart" .root }}
{{ include "platform.selectorLabels" . }}
{{- if .root.Chart.AppVersion }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: {{ include "platform.name" .root }}
{{- with .root.Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- with .c.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The values of one component: the component's own values merged over
componentDefaults. Returned as YAML, read back with fromYaml.
*/}}
{{- define "platform.component" -}}
{{- $defaults := deepCopy .root.Values.componentDefaults -}}
{{- $merged := mustMergeOverwrite $defaults (deepCopy .c) -}}
{{- toYaml $merged -}}
{{- end -}}

{{/* The image of a component: registry/repository:tag or @digest. */}}
{{- define "platform.image" -}}
{{- $registry := .c.image.registry | default .root.Values.global.imageRegistry -}}
{{- $repository := .c.image.repository | default (printf "platform/%s" .name) -}}
{{- $tag := .c.image.tag | default .root.Chart.AppVersion | toString -}}
{{- if .c.image.digest -}}
{{- printf "%s/%s@%s" $registry $repository .c.image.digest -}}
{{- else -}}
{{- printf "%s/%s:%s" $registry $repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount of a component. */}}
{{- define "platform.serviceAccountName" -}}
{{- if .c.serviceAccount.create -}}
{{- default (include "platform.componentName" .) .c.serviceAccount.name -}}
{{- else -}}
{{- default "default" .c.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Environment variables: the global ones, then the component's, sorted by name. */}}
{{- define "platform.env" -}}
{{- $env := merge (deepCopy (.c.env | default dict)) (deepCopy .root.Values.global.env) -}}
{{- range $k := keys $env | sortAlpha }}
{{- $v := toString (get $env $k) }}
- name: {{ $k | upper | replace "-" "_" }}
  value: {{ if contains "{{" $v }}{{ tpl $v $.root | quote }}{{ else }}{{ $v | quote }}{{ end }}
{{- end }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: COMPONENT
  value: {{ .name | quote }}
{{- end -}}

{{/* Pod anti-affinity by preset, as many charts offer it. */}}
{{- define "platform.affinity" -}}
{{- if eq .c.podAntiAffinityPreset "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels: {{- include "platform.selectorLabels" . | nindent 10 }}
      topologyKey: kubernetes.io/hostname
{{- else if eq .c.podAntiAffinityPreset "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 1
      podAffinityTerm:
        labelSelector:
          matchLabels: {{- include "platform.selectorLabels" . | nindent 12 }}
        topologyKey: kubernetes.io/hostname
{{- end }}
{{- with .c.nodeAffinity }}
nodeAffinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The API version of Ingress the cluster serves. */}}
{{- define "platform.ingress.apiVersion" -}}
{{- if .Capabilities.APIVersions.Has "networking.k8s.io/v1/Ingress" -}}
networking.k8s.io/v1
{{- else -}}
networking.k8s.io/v1beta1
{{- end -}}
{{- end -}}
