package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"k8s.io/klog/v2"
)

// RegistryHandler serves the registry's metrics, a few hundred series: the
// extender's own counters and histograms, the Go runtime's, the build's.
// The scraper picks the format: the text format, OpenMetrics, or protobuf,
// which carries the histograms' native (sparse) buckets too.
func RegistryHandler(reg prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Handler serves the state's series in the Prometheus text format, gzipped
// when the scraper accepts it. They are written from the state's snapshot,
// not gathered, so the text format is the only one offered.
func (s *State) Handler() http.Handler {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := s.snapshot()
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
		s.write(bw, snap)
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
