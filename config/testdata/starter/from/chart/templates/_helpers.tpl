{{- define "cache.labels" -}}
app.kubernetes.io/name: cache
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
