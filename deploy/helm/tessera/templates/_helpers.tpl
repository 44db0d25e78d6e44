{{/*
Names. Every object is named after the release so that two releases (say, a
staging copy in another namespace) do not collide on cluster-scoped objects.
*/}}
{{- define "tessera.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tessera.scheduler.fullname" -}}{{ include "tessera.fullname" . }}-scheduler{{- end -}}
{{- define "tessera.webhook.fullname" -}}{{ include "tessera.fullname" . }}-webhook{{- end -}}
{{- define "tessera.devicePlugin.fullname" -}}{{ include "tessera.fullname" . }}-device-plugin{{- end -}}

{{/* The host path of HAMi-core's library: devicePlugin.libraryPath, or where
the hami-core init container puts it when only the image is named. */}}
{{- define "tessera.hamiCoreLibrary" -}}
{{- $d := .Values.devicePlugin -}}
{{- if $d.libraryPath -}}{{ $d.libraryPath }}{{- else if $d.hamiCore.image -}}/usr/local/vgpu/libvgpu.so{{- end -}}
{{- end -}}

{{/* The namespace of the nodes' Leases, never the release namespace, which
holds the scheduler's leader-election Lease: the device plugins may write
every Lease of theirs. */}}
{{- define "tessera.nodeLeaseNamespace" -}}
{{- if eq .Values.nodeLeases.namespace .Release.Namespace -}}
{{- fail (printf "nodeLeases.namespace must differ from the release namespace %s, which holds the scheduler's leader-election Lease: the device plugins may write every Lease of the nodes' namespace" .Release.Namespace) -}}
{{- end -}}
{{- .Values.nodeLeases.namespace -}}
{{- end -}}

{{- define "tessera.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tessera
{{- end -}}

{{/* Selector labels: a subset of the labels that never changes on upgrade. */}}
{{- define "tessera.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tessera.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
The extended resource names as one YAML/CEL list literal, for the
webhook's matchConditions.
*/}}
{{- define "tessera.resourceNameList" -}}
{{- $d := .Values.devicePlugin -}}
{{- if and (eq $d.deviceListStrategy "cdi") (not $d.driverRoot) -}}
{{- fail "devicePlugin.deviceListStrategy cdi needs devicePlugin.driverRoot (\"/\" for a driver installed on the host, /run/nvidia/driver for the GPU operator's): the CDI spec mounts the driver's libraries from there, or CUDA finds none in the container" -}}
{{- end -}}
{{- $n := .Values.resourceNames -}}
[{{ list $n.count $n.memory $n.memoryPercentage $n.cores | toJson | trimPrefix "[" | trimSuffix "]" | replace "\"" "'" | replace "," ", " }}]
{{- end -}}

{{/*
A duration such as "1m30s" in seconds (the schema admits h, m, s and ms),
so that two durations can be compared.
*/}}
{{- define "tessera.seconds" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9.]+(ms|h|m|s)" . -1 -}}
{{- $value := regexFind "^[0-9.]+" . | float64 -}}
{{- $unit := regexReplaceAll "^[0-9.]+" . "" -}}
{{- $scale := get (dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001) $unit -}}
{{- $total = addf $total (mulf $value $scale) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* Checks across values, which the schema cannot express. */}}
{{- define "tessera.validate" -}}
{{- $s := .Values.scheduler -}}
{{- if and (gt (int $s.replicas) 1) (not $s.leaderElection) -}}
{{- fail (printf "scheduler.replicas is %d but scheduler.leaderElection is false: schedulers without leader election would place the same pods at once; turn it on or use 1 replica" (int $s.replicas)) -}}
{{- end -}}
{{- $wait := include "tessera.seconds" $s.extender.bindWaitTimeout | float64 -}}
{{- $timeout := include "tessera.seconds" $s.extender.httpTimeout | float64 -}}
{{- if ge $wait $timeout -}}
{{- fail (printf "scheduler.extender.bindWaitTimeout %s must be shorter than scheduler.extender.httpTimeout %s: kube-scheduler would give up on a bind that is still waiting for its node" $s.extender.bindWaitTimeout $s.extender.httpTimeout) -}}
{{- end -}}
{{- $heartbeat := include "tessera.seconds" .Values.devicePlugin.heartbeatPeriod | float64 -}}
{{- $maxAge := include "tessera.seconds" $s.extender.heartbeatMaxAge | float64 -}}
{{- if lt $maxAge (mulf 2.0 $heartbeat) -}}
{{- fail (printf "scheduler.extender.heartbeatMaxAge %s must be at least twice devicePlugin.heartbeatPeriod %s: one late heartbeat would take a healthy node out of scheduling" $s.extender.heartbeatMaxAge .Values.devicePlugin.heartbeatPeriod) -}}
{{- end -}}
{{- $d := .Values.devicePlugin -}}
{{- if and (eq $d.deviceListStrategy "cdi") (not $d.driverRoot) -}}
{{- fail "devicePlugin.deviceListStrategy cdi needs devicePlugin.driverRoot (\"/\" for a driver installed on the host, /run/nvidia/driver for the GPU operator's): the CDI spec mounts the driver's libraries from there, or CUDA finds none in the container" -}}
{{- end -}}
{{- if lt (include "tessera.seconds" $d.rescanPeriod | float64) 1.0 -}}
{{- fail (printf "devicePlugin.rescanPeriod %s must be at least 1s: the device plugin refuses a shorter one and would not start on any node" $d.rescanPeriod) -}}
{{- end -}}
{{- if $s.extender.gangFit.enabled -}}
{{- if eq $d.mode "dra" -}}
{{- fail "scheduler.extender.gangFit.enabled does not work with devicePlugin.mode dra: kube-scheduler's DRA allocator chooses the GPUs there and would not keep the room the check holds" -}}
{{- end -}}
{{- end -}}
{{- if and $s.gangs (ne $s.mode "plugin") -}}
{{- fail "scheduler.gangs needs scheduler.mode plugin: kube-scheduler's pod group cycle tries a gang's pods and undoes them through Reserve and Unreserve, which an extender never gets, so the extender's books would keep GPUs for pods never placed; use tessera-scheduler, or Kueue's gang-fit check (scheduler.extender.gangFit) in extender mode" -}}
{{- end -}}
{{- if and $s.dra.schedulerName (ne $s.mode "plugin") -}}
{{- fail "scheduler.dra.schedulerName needs scheduler.mode plugin: the DRA profile runs Tessera's TesseraDRA, which only tessera-scheduler has" -}}
{{- end -}}
{{- if and $s.dra.schedulerName (eq $s.dra.schedulerName .Values.schedulerName) -}}
{{- fail (printf "scheduler.dra.schedulerName %s must differ from schedulerName, the profile of the other GPU pods" $s.dra.schedulerName) -}}
{{- end -}}
{{- $n := .Values.resourceNames -}}
{{- if ne (len (list $n.count $n.memory $n.memoryPercentage $n.cores | uniq)) 4 -}}
{{- fail (printf "resourceNames must be four different names, got count=%s memory=%s memoryPercentage=%s cores=%s" $n.count $n.memory $n.memoryPercentage $n.cores) -}}
{{- end -}}
{{- end -}}

{{/*
The webhook's termination grace period in whole seconds: its preStop drain,
then the time in-flight reviews get to finish, and a margin of 5 s.
*/}}
{{- define "tessera.webhook.terminationGracePeriod" -}}
{{- $w := .Values.webhook -}}
{{- $shutdown := include "tessera.seconds" $w.shutdownTimeout | float64 | ceil | int -}}
{{- add (int $w.drainSeconds) $shutdown 5 -}}
{{- end -}}

{{- /*
The webhook's mode: webhook.mode, or else the device plugin's (dra or
extender).
*/ -}}
{{- define "tessera.webhook.mode" -}}
{{- if .Values.webhook.mode -}}{{ .Values.webhook.mode }}{{- else if eq .Values.devicePlugin.mode "dra" -}}dra{{- else -}}extender{{- end -}}
{{- end -}}
