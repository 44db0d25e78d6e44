package framework

// gangsFeatureGates turns on Kubernetes' Workload API (Workload and
// PodGroup) and the scheduler's pod group cycle. It must be on in every
// control-plane process: kube-apiserver serves the API and keeps
// spec.schedulingGroup on pods only with it, kube-scheduler schedules a
// PodGroup's pods as one group only with it, and kube-controller-manager
// runs the PodGroup protection controller only with it.
// TopologyAwareWorkloadScheduling (alpha) lets kube-scheduler try a
// group on the placements a plugin proposes and pick the best by the
// plugins' placement scores, which is how tessera-scheduler places a
// gang as a whole; kube-apiserver keeps a PodGroup's topology constraint
// only with it.
const gangsFeatureGates = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// gangsRuntimeConfig serves scheduling.k8s.io/v1beta1, where Workload and
// PodGroup live; it is off by default in v1.37.
const gangsRuntimeConfig = "--runtime-config=scheduling.k8s.io/v1beta1=true"

// gangsController is the kube-controller-manager controller Options.Gangs
// adds: it keeps a PodGroup from being deleted while pods still name it.
const gangsController = "podgroup-protection-controller"

// gangsAPIServerFlags are the kube-apiserver flags Options.Gangs adds.
func gangsAPIServerFlags() []string {
	return []string{gangsFeatureGates, gangsRuntimeConfig}
}
