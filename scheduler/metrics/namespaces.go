package metrics

import (
	"bufio"
	"cmp"
	"math"
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Quotas tell every namespace's GPU limits.
type Quotas interface {
	All() map[string]quota.Limits
}

// namespaceFamilies are the per-namespace series of GPU quota: what the
// namespace's pods hold of it (the view's allocations and binds in
// progress, counted as the scheduler enforces the quota) and its hard
// limit, for each of memory, cores and GPUs.
type namespaceFamilies struct {
	resources []namespaceResource
}

// namespaceResource is one quota resource's pair of families.
type namespaceResource struct {
	used, hard family
	// scale turns the resource's unit into the series' base unit.
	scale float64
	// of picks the resource out of a use, limit out of limits.
	of    func(u placement.Use) int64
	limit func(l quota.Limits) quota.Limit
}

func newNamespaceFamilies() namespaceFamilies {
	pair := func(name, what, unit string, scale float64, of func(placement.Use) int64, limit func(quota.Limits) quota.Limit) namespaceResource {
		labels := []string{"namespace"}
		return namespaceResource{
			used: family{namespace + "_namespace_" + name + "_used" + unit,
				"GPU " + what + " the namespace's pods hold, as the scheduler counts its GPU quota.", labels},
			hard: family{namespace + "_namespace_" + name + "_hard" + unit,
				"Hard limit of the namespace's unscoped ResourceQuotas on GPU " + what + ", the tightest of them.", labels},
			scale: scale, of: of, limit: limit,
		}
	}
	return namespaceFamilies{resources: []namespaceResource{
		pair("gpu_memory", "memory", "_bytes", mib,
			func(u placement.Use) int64 { return u.MemoryMiB }, func(l quota.Limits) quota.Limit { return l.MemoryMiB }),
		pair("gpu_cores", "compute in percent of one GPU", "", 1,
			func(u placement.Use) int64 { return u.Cores }, func(l quota.Limits) quota.Limit { return l.Cores }),
		pair("gpus", "count", "", 1,
			func(u placement.Use) int64 { return u.GPUs }, func(l quota.Limits) quota.Limit { return l.GPUs }),
	}}
}

// namespaceQuota is one namespace's row: what it holds and its limits.
type namespaceQuota struct {
	name   string
	used   placement.Use
	limits quota.Limits
}

// namespaceSnapshot copies every namespace that holds GPUs or has limits,
// in order of name.
func namespaceSnapshot(v *view.View, quotas Quotas) []namespaceQuota {
	all := quotas.All()
	var out []namespaceQuota
	v.EachNamespace(func(ns string, used placement.Use) {
		out = append(out, namespaceQuota{name: ns, used: used, limits: all[ns]})
	})
	for ns, limits := range all {
		if !slices.ContainsFunc(out, func(q namespaceQuota) bool { return q.name == ns }) {
			out = append(out, namespaceQuota{name: ns, limits: limits})
		}
	}
	slices.SortFunc(out, func(a, b namespaceQuota) int { return cmp.Compare(a.name, b.name) })
	return out
}

// write writes the namespaces' series; a resource without a limit has no
// hard series.
func (f *namespaceFamilies) write(w *bufio.Writer, buf []byte, rows []namespaceQuota) []byte {
	if len(rows) == 0 {
		return buf
	}
	for i := range f.resources {
		r := &f.resources[i]
		r.used.header(w)
		for _, row := range rows {
			buf = r.used.sample(w, buf, float64(r.of(row.used))*r.scale, row.name)
		}
		if !slices.ContainsFunc(rows, func(row namespaceQuota) bool { return r.limit(row.limits).Set }) {
			continue
		}
		r.hard.header(w)
		for _, row := range rows {
			if l := r.limit(row.limits); l.Set {
				buf = r.hard.sample(w, buf, hardValue(l.Hard, r.scale), row.name)
			}
		}
	}
	return buf
}

// hardValue is a limit in the series' unit; one beyond what can be asked
// is +Inf.
func hardValue(hard int64, scale float64) float64 {
	if hard == math.MaxInt64 {
		return math.Inf(1)
	}
	return float64(hard) * scale
}
