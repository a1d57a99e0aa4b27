{{/* The config.yaml of a component. */}}
{{- define "platform.configData" -}}
config.yaml: |
  component: {{ .name }}
  release: {{ .root.Release.Name }}
  namespace: {{ .root.Release.Namespace }}
  logLevel: {{ .c.logLevel | default .root.Values.global.logLevel }}
  listen: ":{{ (first .c.ports).containerPort }}"
  {{- with .c.config }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- if .root.Values.cache.enabled }}
  cache:
    address: {{ .root.Release.Name }}-cache:6379
    ttl: {{ .c.cacheTTL | default "5m" }}
  {{- end }}
  features:
    {{- range $f, $on := .root.Values.global.features }}
    {{ $f }}: {{ $on }}
    {{- end }}
{{- range $file, $content := .c.files }}
{{ $file }}: {{ tpl $content $.root | quote }}
{{- end }}
{{- end -}}

{{- define "platform.secretData" -}}
{{- range $k, $v := .c.secrets }}
{{ $k }}: {{ $v | toString | b64enc | quote }}
{{- end }}
API_TOKEN: {{ printf "%s-%s-token" $.root.Release.Name $.name | sha256sum | trunc 32 | b64enc | quote }}
{{- end -}}
