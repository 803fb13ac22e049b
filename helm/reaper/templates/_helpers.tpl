{{/* The chart's name, cut to 63 characters (a DNS label). */}}
{{- define "reaper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for every object. */}}
{{- define "reaper.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "reaper.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "reaper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reaper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "reaper.labels" -}}
helm.sh/chart: {{ include "reaper.chart" . }}
{{ include "reaper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "reaper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "reaper.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "reaper.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* reaper.yaml as the ConfigMap carries it (and as its checksum sees it). */}}
{{- define "reaper.configYaml" -}}
{{- toYaml .Values.config }}
{{- end }}

{{/* The port http.listen names (the text after its last colon). */}}
{{- define "reaper.httpPort" -}}
{{- regexReplaceAll "^.*:" .Values.config.http.listen "" }}
{{- end }}
