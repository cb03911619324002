{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "pfslayout.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name used for every namespaced object. */}}
{{- define "pfslayout.fullname" -}}
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

{{- define "pfslayout.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "pfslayout.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: pfs-layout-operator
{{- end -}}

{{- define "pfslayout.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pfslayout.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pfslayout.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pfslayout.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "pfslayout.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Name of the Secret holding the webhook's serving certificate. */}}
{{- define "pfslayout.webhookSecret" -}}
{{- if or .Values.webhook.certManager.enabled (not .Values.webhook.tls.secretName) -}}
{{- printf "%s-webhook-tls" (include "pfslayout.fullname" .) -}}
{{- else -}}
{{- .Values.webhook.tls.secretName -}}
{{- end -}}
{{- end -}}

{{/* Where the webhook's certificate comes from: certManager, secret (the user's) or operator. */}}
{{- define "pfslayout.webhookCerts" -}}
{{- if .Values.webhook.certManager.enabled -}}certManager
{{- else if .Values.webhook.tls.secretName -}}secret
{{- else -}}operator
{{- end -}}
{{- end -}}

{{/* A Secret of your own needs the CA that signed it: the API server must trust the serving certificate. */}}
{{- define "pfslayout.validateWebhook" -}}
{{- if and .Values.webhook.enabled (eq (include "pfslayout.webhookCerts" .) "secret") (not .Values.webhook.tls.caBundle) -}}
{{- fail "webhook.tls.secretName needs webhook.tls.caBundle (the base64 PEM CA that signed the Secret's certificate); or unset webhook.tls.secretName to let the operator generate the certificate" -}}
{{- end -}}
{{- end -}}

{{/* "true" when operator.watchNamespaces serves every namespace ("*"), else "". */}}
{{- define "pfslayout.allNamespaces" -}}
{{- if has "*" .Values.operator.watchNamespaces -}}true{{- end -}}
{{- end -}}

{{/* The ClusterRole holding the operator's rights inside one namespace it serves (bound per namespace). */}}
{{- define "pfslayout.namespaceRole" -}}
{{- printf "%s-namespace" (include "pfslayout.fullname" .) -}}
{{- end -}}
