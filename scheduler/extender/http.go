package extender

import (
	"encoding/json"
	"net/http"
	"time"

	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/extenderargs"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// Register adds the extender's endpoints to mux: POST /filter,
// /prioritize, /bind and /preempt.
func (e *Extender) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /filter", e.serveFilter)
	mux.HandleFunc("POST /prioritize", e.servePrioritize)
	mux.HandleFunc("POST /bind", e.serveBind)
	mux.HandleFunc("POST /preempt", e.servePreempt)
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
	c := e.calls.get()
	defer e.calls.put(c)
	if err := c.read(w, r); err != nil {
		e.observe(metrics.VerbFilter, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, &extenderv1.ExtenderFilterResult{Error: err.Error()})
		return
	}
	outcome := e.filter(r.Context(), &c.args, &c.filter)
	var err error
	c.out, err = c.filter.appendJSON(c.out[:0])
	e.observe(metrics.VerbFilter, outcome, start)
	if err != nil {
		e.reply(w, r, http.StatusInternalServerError, &extenderv1.ExtenderFilterResult{Error: err.Error()})
		return
	}
	e.write(w, r, http.StatusOK, c.out)
}

func (e *Extender) servePrioritize(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	c := e.calls.get()
	defer e.calls.put(c)
	if err := c.read(w, r); err != nil {
		e.observe(metrics.VerbPrioritize, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, errorBody{err.Error()})
		return
	}
	outcome, err := e.prioritize(r.Context(), &c.args, &c.priority)
	e.observe(metrics.VerbPrioritize, outcome, start)
	if err != nil {
		e.replyError(w, r, outcome, err)
		return
	}
	c.out = c.priority.appendJSON(c.out[:0])
	e.write(w, r, http.StatusOK, c.out)
}

func (e *Extender) serveBind(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	var args extenderv1.ExtenderBindingArgs
	if err := extenderargs.Decode(http.MaxBytesReader(w, r.Body, MaxRequestBytes), "ExtenderBindingArgs", &args); err != nil {
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

func (e *Extender) servePreempt(w http.ResponseWriter, r *http.Request) {
	start := e.Clock.Now()
	var args extenderv1.ExtenderPreemptionArgs
	if err := extenderargs.Decode(http.MaxBytesReader(w, r.Body, MaxRequestBytes), "ExtenderPreemptionArgs", &args); err != nil {
		e.observe(metrics.VerbPreempt, metrics.ResultInvalid, start)
		e.reply(w, r, http.StatusBadRequest, errorBody{err.Error()})
		return
	}
	result, outcome, err := e.Preempt(r.Context(), &args)
	e.observe(metrics.VerbPreempt, outcome, start)
	if err != nil {
		e.replyError(w, r, outcome, err)
		return
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

// replyError answers a prioritize or preempt call that failed, whose wire
// types have no place for an error: 503 when the extender could not
// decide (the outcome is an error), 400 when the request was at fault.
func (e *Extender) replyError(w http.ResponseWriter, r *http.Request, outcome string, err error) {
	status := http.StatusBadRequest
	if outcome == metrics.ResultError {
		status = http.StatusServiceUnavailable
	}
	e.reply(w, r, status, errorBody{err.Error()})
}

// reply encodes body as the answer.
func (e *Extender) reply(w http.ResponseWriter, r *http.Request, status int, body any) {
	data, err := json.Marshal(body)
	if err != nil {
		klog.FromContext(r.Context()).V(2).Info("Encoding the answer failed", "path", r.URL.Path, "err", err)
		status, data = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	e.write(w, r, status, append(data, '\n'))
}

// write answers with an encoded JSON body.
func (e *Extender) write(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		klog.FromContext(r.Context()).V(2).Info("Writing the answer failed", "path", r.URL.Path, "err", err)
	}
}
