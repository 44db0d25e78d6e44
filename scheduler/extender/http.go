package extender

import (
	"encoding/json"
	"net/http"
	"time"

	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// Register adds the extender's endpoints to mux: POST /filter,
// /prioritize and /bind.
func (e *Extender) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /filter", e.serveFilter)
	mux.HandleFunc("POST /prioritize", e.servePrioritize)
	mux.HandleFunc("POST /bind", e.serveBind)
}

// errorBody is the answer to a prioritize call that fails, whose wire type
// has no place for an error.
type errorBody struct {
	Error string `json:"error"`
}

// The wire types carry the error of a request that was understood in the
// body of a 200 answer, since kube-scheduler reads the body of 200 answers
// only. A request that could not be decoded gets 400.

func (e *Extender) serveFilter(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	var args extenderv1.ExtenderArgs
	if err := decode(http.MaxBytesReader(w, r.Body, MaxRequestBytes), "ExtenderArgs", &args); err != nil {
		e.observe(metrics.VerbFilter, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, &extenderv1.ExtenderFilterResult{Error: err.Error()})
		return
	}
	result, outcome := e.Filter(r.Context(), &args)
	e.observe(metrics.VerbFilter, outcome, start)
	e.reply(w, r, http.StatusOK, result)
}

func (e *Extender) servePrioritize(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	var args extenderv1.ExtenderArgs
	if err := decode(http.MaxBytesReader(w, r.Body, MaxRequestBytes), "ExtenderArgs", &args); err != nil {
		e.observe(metrics.VerbPrioritize, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, errorBody{err.Error()})
		return
	}
	scores, outcome, err := e.Prioritize(r.Context(), &args)
	e.observe(metrics.VerbPrioritize, outcome, start)
	if err != nil {
		status := http.StatusBadRequest
		if outcome == metrics.ResultError {
			status = http.StatusServiceUnavailable
		}
		e.reply(w, r, status, errorBody{err.Error()})
		return
	}
	e.reply(w, r, http.StatusOK, scores)
}

func (e *Extender) serveBind(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	var args extenderv1.ExtenderBindingArgs
	if err := decode(http.MaxBytesReader(w, r.Body, MaxRequestBytes), "ExtenderBindingArgs", &args); err != nil {
		e.observe(metrics.VerbBind, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, &extenderv1.ExtenderBindingResult{Error: err.Error()})
		return
	}
	outcome, err := e.Bind(r.Context(), &args)
	e.observe(metrics.VerbBind, outcome, start)
	result := &extenderv1.ExtenderBindingResult{}
	if err != nil {
		klog.FromContext(r.Context()).V(2).Info("Bind failed", "pod", klog.KRef(args.PodNamespace, args.PodName), "node", args.Node, "err", err)
		result.Error = err.Error()
	}
	e.reply(w, r, http.StatusOK, result)
}

func (e *Extender) observe(verb, result string, start time.Time) {
	if e.Metrics == nil {
		return
	}
	e.Metrics.Total.WithLabelValues(verb, result).Inc()
	e.Metrics.Duration.WithLabelValues(verb).Observe(e.Clock.Since(start).Seconds())
}

func (e *Extender) reply(w http.ResponseWriter, r *http.Request, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(body); err != nil {
		klog.FromContext(r.Context()).V(2).Info("Writing the answer failed", "path", r.URL.Path, "err", err)
	}
}
