package fitgate

import (
	"strconv"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// ShapeKey is the same for requests that fit the same GPUs the same way.
func ShapeKey(req *placement.Request) string {
	b := make([]byte, 0, 64)
	for _, c := range req.Containers {
		b = strconv.AppendQuote(b, string(c.Kind))
		for _, v := range []int64{int64(c.Count), c.MemoryMiB, int64(c.MemoryPercent), int64(c.Cores)} {
			b = strconv.AppendInt(append(b, ' '), v, 10)
		}
		b = append(b, ';')
	}
	sel := &req.Selection
	for _, list := range [][]string{sel.Types, sel.ExcludeTypes, sel.UUIDs, sel.ExcludeUUIDs, sel.MIGProfiles} {
		b = append(b, '[')
		for _, item := range list {
			b = strconv.AppendQuote(b, item)
		}
		b = append(b, ']')
	}
	b = strconv.AppendQuote(b, string(sel.Mode))
	b = strconv.AppendBool(b, sel.NUMABind)
	b = strconv.AppendQuote(b, string(req.GPUPolicy))
	return string(b)
}
