package framework

// StockSchedulerConfig is kube-scheduler's default configuration, as DRA
// mode runs it: DynamicResources is in its default profile, and
// consumable capacity is on by default.
const StockSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`
