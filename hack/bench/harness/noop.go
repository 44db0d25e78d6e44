package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// noopDurationMetric is the no-op extender's latency histogram.
const noopDurationMetric = "bench_noop_extender_request_duration_seconds"

// noopExtender speaks the extender protocol with the same verbs as
// Tessera's and does nothing else: filter passes every node, prioritize
// scores every node 0, bind posts the Binding. It is the ceiling of any
// extender: what kube-scheduler's extender calls cost by themselves.
type noopExtender struct {
	kube     kubernetes.Interface
	duration *prometheus.HistogramVec
	registry *prometheus.Registry
}

// newNoopExtender returns a no-op extender that binds through kube.
func newNoopExtender(kube kubernetes.Interface) (*noopExtender, error) {
	e := &noopExtender{
		kube:     kube,
		registry: prometheus.NewRegistry(),
		// The buckets of Tessera's extender, so both are read alike.
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    noopDurationMetric,
			Help:    "Latency of the no-op extender's requests.",
			Buckets: metrics.RequestDurationBuckets,
		}, []string{"verb"}),
	}
	if err := e.registry.Register(e.duration); err != nil {
		return nil, err
	}
	return e, nil
}

// serve listens on a free loopback port until ctx ends and returns the URL
// prefix to give kube-scheduler.
func (e *noopExtender) serve(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening for the no-op extender: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", e.timed(VerbFilter, e.filter))
	mux.HandleFunc("POST /prioritize", e.timed(VerbPrioritize, e.prioritize))
	mux.HandleFunc("POST /bind", e.timed(VerbBind, e.bind))
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "No-op extender stopped serving")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

// Quantiles are the latencies of the requests so far, by verb.
func (e *noopExtender) Quantiles() (map[string]meter.Quantiles, error) {
	families, err := e.registry.Gather()
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return meter.VerbQuantiles(byName, noopDurationMetric), nil
}

// handler answers one decoded request; its error goes in the reply.
type handler func(ctx context.Context, body *json.Decoder) (any, error)

func (e *noopExtender) timed(verb string, h handler) http.HandlerFunc {
	observer := e.duration.WithLabelValues(verb)
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		reply, err := h(r.Context(), json.NewDecoder(r.Body))
		status := http.StatusOK
		if err != nil {
			status = http.StatusBadRequest
			reply = map[string]string{"error": err.Error()}
		}
		// Observed before the answer is written, as Tessera's extender does.
		observer.Observe(time.Since(start).Seconds())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(reply)
	}
}

func (e *noopExtender) filter(_ context.Context, body *json.Decoder) (any, error) {
	var args extenderv1.ExtenderArgs
	if err := body.Decode(&args); err != nil {
		return nil, fmt.Errorf("decoding ExtenderArgs: %w", err)
	}
	return &extenderv1.ExtenderFilterResult{NodeNames: args.NodeNames}, nil
}

func (e *noopExtender) prioritize(_ context.Context, body *json.Decoder) (any, error) {
	var args extenderv1.ExtenderArgs
	if err := body.Decode(&args); err != nil {
		return nil, fmt.Errorf("decoding ExtenderArgs: %w", err)
	}
	var names []string
	if args.NodeNames != nil {
		names = *args.NodeNames
	}
	scores := make(extenderv1.HostPriorityList, len(names))
	for i, n := range names {
		scores[i] = extenderv1.HostPriority{Host: n, Score: 0}
	}
	return &scores, nil
}

func (e *noopExtender) bind(ctx context.Context, body *json.Decoder) (any, error) {
	var args extenderv1.ExtenderBindingArgs
	if err := body.Decode(&args); err != nil {
		return nil, fmt.Errorf("decoding ExtenderBindingArgs: %w", err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: args.PodName, Namespace: args.PodNamespace, UID: args.PodUID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: args.Node},
	}
	result := &extenderv1.ExtenderBindingResult{}
	if err := e.kube.CoreV1().Pods(args.PodNamespace).Bind(ctx, binding, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		result.Error = fmt.Sprintf("binding pod %s/%s to node %s: %v", args.PodNamespace, args.PodName, args.Node, err)
	}
	return result, nil
}
