{{/*
Names. Namespaced objects are named from the release (homing.fullname) and live in the
release namespace. Cluster-scoped objects, and Roles the chart puts in other namespaces,
also carry the release namespace (homing.clusterName): a release "homing" in namespace a and
another "homing" in namespace b then own different objects.
*/}}

{{- define "homing.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 45 | trimSuffix "-" }}
{{- end }}

{{/*
45 characters at most: the longest suffix the chart adds (-pod-deletion-cost) still leaves
every name within the 63 of a DNS label, which Services and Roles need.
*/}}
{{- define "homing.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
<namespace>-<fullname>; past 45 characters cut to 36 and given 8 characters of its hash, so
two long names that share a start still differ.
*/}}
{{- define "homing.clusterName" -}}
{{- $full := printf "%s-%s" .Release.Namespace (include "homing.fullname" .) }}
{{- if gt (len $full) 45 }}
{{- printf "%s-%s" ($full | trunc 36 | trimSuffix "-") ($full | sha256sum | trunc 8) }}
{{- else }}
{{- $full }}
{{- end }}
{{- end }}

{{- define "homing.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "homing.serviceAccountName" -}}
{{- include "homing.fullname" . }}
{{- end }}

{{/* What the API server sees the operator as: the pod-deletion-cost and node-label policies match it. */}}
{{- define "homing.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "homing.serviceAccountName" .) }}
{{- end }}

{{- define "homing.webhookServiceName" -}}
{{- include "homing.fullname" . }}-webhook
{{- end }}

{{/* The operator keeps its webhook certificate here (certstore.py); the Role homing-tls names it. */}}
{{- define "homing.tlsSecretName" -}}
{{- include "homing.fullname" . }}-webhook-tls
{{- end }}

{{/* cert-manager's Certificate for the webhook, and the Secret it issues into (certManager.enabled). */}}
{{- define "homing.certificateName" -}}
{{- include "homing.fullname" . }}-webhook-cert
{{- end }}

{{/* Where the operator's pods mount that Secret. */}}
{{- define "homing.mountedTLSDir" -}}
/etc/homing-tls
{{- end }}

{{- define "homing.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Labels. */}}

{{- define "homing.selectorLabels" -}}
app.kubernetes.io/name: {{ include "homing.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "homing.labels" -}}
helm.sh/chart: {{ include "homing.chart" . }}
{{ include "homing.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: homing
{{- end }}

{{/* The operator's pods: the Deployment's selector, the Services', the PDB's, the NetworkPolicy's. */}}
{{- define "homing.operatorSelectorLabels" -}}
{{ include "homing.selectorLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/*
The scope the operator serves, read from config.scope with the operator's defaults
(operator/homing/config.py Scope), as a dict: the webhook configuration and the policies
follow it exactly as the operator does.
*/}}
{{- define "homing.scope" -}}
{{- $scope := .Values.config.scope | default dict }}
{{- $shard := .Values.config.shard | default "" }}
{{- $optIn := not $shard }}
{{- if hasKey $scope "pod_opt_in" }}{{ $optIn = $scope.pod_opt_in }}{{ end }}
{{- dict
  "namespaceLabel" ($scope.namespace_label | default "homing.io/enabled")
  "namespaceValue" (hasKey $scope "namespace_label_value" | ternary $scope.namespace_label_value "true")
  "podLabel" ($scope.pod_label | default "homing.io/enabled")
  "podOptIn" $optIn | toJson }}
{{- end }}

{{/*
A label selector narrowed by another (homing.kube.admission.webhookconfig.narrowed): both selectors'
matchLabels and matchExpressions, the first's label value kept where both name a label.
Takes (list SELECTOR EXTRA).
*/}}
{{- define "homing.narrowed" -}}
{{- $base := index . 0 }}
{{- $extra := index . 1 | default dict }}
{{- $labels := merge (dict) ($base.matchLabels | default dict) ($extra.matchLabels | default dict) }}
{{- $expressions := concat ($base.matchExpressions | default list) ($extra.matchExpressions | default list) }}
{{- $out := dict }}
{{- if $labels }}{{ $_ := set $out "matchLabels" $labels }}{{ end }}
{{- if $expressions }}{{ $_ := set $out "matchExpressions" $expressions }}{{ end }}
{{- toYaml $out }}
{{- end }}
