{{/*
Names and labels shared by every template.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "punctual.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object's name: "<release>-<chart>", or just the release when it already
contains the chart name. 63 characters at most (DNS label); the Redis objects add "-redis".
*/}}
{{- define "punctual.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 57 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 57 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 57 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "punctual.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The recommended labels, without a component: every object of the release carries them. */}}
{{- define "punctual.labels" -}}
helm.sh/chart: {{ include "punctual.chart" . }}
app.kubernetes.io/name: {{ include "punctual.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: punctual
{{- end -}}

{{/*
Selector labels of the operator pods. The component keeps the bundled Redis pods out of the
operator's Deployment, PodDisruptionBudget and metrics Service. Immutable once installed.
*/}}
{{- define "punctual.selectorLabels" -}}
app.kubernetes.io/name: {{ include "punctual.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "punctual.operatorLabels" -}}
{{ include "punctual.labels" . }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "punctual.redis.fullname" -}}
{{- printf "%s-redis" (include "punctual.fullname" .) -}}
{{- end -}}

{{- define "punctual.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "punctual.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "punctual.redis.labels" -}}
{{ include "punctual.labels" . }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "punctual.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "punctual.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator image: repository:tag, or repository@digest when a digest pins it. */}}
{{- define "punctual.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Where the Redis URL comes from, as "secret-name/key", or "" when no Redis is configured. The
operator gets it whatever the lock backend: queue targets use the same Redis.
Fails on contradictory settings, so a mistake shows at install time rather than as a crash loop.
*/}}
{{- define "punctual.redisUrlSecret" -}}
{{- $redis := .Values.lock.redis -}}
{{- $sources := 0 -}}
{{- if $redis.existingSecret }}{{ $sources = add1 $sources }}{{ end -}}
{{- if $redis.url }}{{ $sources = add1 $sources }}{{ end -}}
{{- if .Values.redis.bundled.enabled }}{{ $sources = add1 $sources }}{{ end -}}
{{- if gt $sources 1 -}}
{{- fail "choose one Redis URL source: lock.redis.existingSecret, lock.redis.url or redis.bundled.enabled" -}}
{{- end -}}
{{- if and (eq .Values.lock.backend "redis") (eq $sources 0) -}}
{{- fail "lock.backend=redis needs a Redis URL: set lock.redis.existingSecret, lock.redis.url or redis.bundled.enabled=true" -}}
{{- end -}}
{{- if $redis.existingSecret -}}
{{- printf "%s/%s" $redis.existingSecret $redis.existingSecretKey -}}
{{- else if $redis.url -}}
{{- printf "%s-redis-url/url" (include "punctual.fullname" .) -}}
{{- else if .Values.redis.bundled.enabled -}}
{{- printf "%s/url" (include "punctual.redis.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Checks that do not belong to one object. */}}
{{- define "punctual.validate" -}}
{{- if and (eq .Values.lock.backend "memory") (gt (int .Values.replicaCount) 1) -}}
{{- fail "lock.backend=memory works with one replica only: set replicaCount=1 or another backend" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled" -}}
{{- end -}}
{{- if eq (int .Values.ports.metrics) (int .Values.ports.health) -}}
{{- fail "ports.metrics and ports.health must differ" -}}
{{- end -}}
{{- end -}}

{{/*
The rules the operator needs on namespaced resources, shared by the ClusterRole (all
namespaces) and the per-namespace Roles (watchNamespaces). Each rule names the code using it.
*/}}
{{- define "punctual.namespacedRules" -}}
# kopf's watch of ScheduledJobs (a list, then a watch), and the status store's and the
# kubernetes lock's read of one object (kube/status.py: StatusApi.read); spec.suspend set by the
# operator after spec.suspendAfterFailures failed runs in a row, a JSON merge patch with a
# resourceVersion precondition (kube/spec_api.py: SpecApi.suspend).
- apiGroups: ["punctual.dev"]
  resources: ["scheduledjobs"]
  verbs: ["get", "list", "watch", "patch"]
# Status writes and the kubernetes lock's compare-and-swap: JSON merge patches of the status
# subresource (kube/status.py: StatusApi.patch). Never update, never the main resource.
- apiGroups: ["punctual.dev"]
  resources: ["scheduledjobs/status"]
  verbs: ["patch"]
# Events about ScheduledJobs (kube/events.py through kopf's poster: POST core/v1 events).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- if .Values.rbac.readSecrets }}
# headersFrom: reading the Secret a job names (kube/secrets.py: SecretReader.read).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
{{- if .Values.jobTarget.enabled }}
# target.job: one batch/v1 Job per slot, watched to completion, deleted past spec.history or
# when concurrencyPolicy Replace cancels it.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "get", "list", "watch", "delete"]
{{- end }}
{{- end -}}

{{/* kopf's cluster-scoped reads (see rbac.* in values.yaml); empty when none applies. */}}
{{- define "punctual.clusterReadRules" -}}
{{- if .Values.rbac.watchCustomResourceDefinitions }}
# kopf's resource observer: notices the ScheduledJob CRD being installed, changed or re-created.
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["list", "watch"]
{{- end }}
{{- if and .Values.watchNamespaces .Values.rbac.listNamespaces }}
# kopf's namespace observer (namespaced mode only): which watched namespaces exist right now.
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}
{{- end -}}

{{/* A resources block from {requests: {cpu, memory}, limits: {cpu, memory}}, empty values left out. */}}
{{- define "punctual.resources" -}}
{{- $resources := dict -}}
{{- range $kind := list "requests" "limits" -}}
{{- $values := dict -}}
{{- range $name, $value := (get $ $kind | default dict) -}}
{{- if $value }}{{ $_ := set $values $name $value }}{{ end -}}
{{- end -}}
{{- if $values }}{{ $_ := set $resources $kind $values }}{{ end -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}
