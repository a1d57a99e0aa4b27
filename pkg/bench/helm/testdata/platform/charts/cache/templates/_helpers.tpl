{{- define "cache.fullname" -}}
{{- printf "%s-cache" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "cache.labels" -}}
app.kubernetes.io/name: cache
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
