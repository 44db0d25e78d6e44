package scaledra

import (
	"fmt"
	"io"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// rows are DRA scale mode's measures of kube-scheduler, one per row.
func (r *ScaleDRAResult) rows() [][]string {
	perPod := func(d time.Duration) string {
		return harness.FormatDuration(d/time.Duration(max(r.Bound, 1)), uint64(r.Bound))
	}
	pps := "—"
	if r.Bound > 0 && r.Duration > 0 {
		pps = fmt.Sprintf("%.1f", float64(r.Bound)/r.Duration.Seconds())
	}
	return [][]string{
		{"kube-scheduler start to ready (informers synced)", harness.FormatDuration(r.SyncTime, 1)},
		{"resident memory 2 s after ready", harness.FormatBytes(r.RSSAfterSync)},
		{"peak resident memory (VmHWM) after sync", harness.FormatBytes(r.PeakAfterSync)},
		{fmt.Sprintf("peak resident memory after scheduling %d new pods", r.NewPods), harness.FormatBytes(r.PeakAfterBatch)},
		{"new pods bound", fmt.Sprintf("%d/%d", r.Bound, r.NewPods)},
		{"pods/s, first creation to last bind", pps},
		{"latency p50 / p99, creation to bind", harness.FormatDuration(r.Latency.P50, r.Latency.Count) + " / " + harness.FormatDuration(r.Latency.P99, r.Latency.Count)},
		{"kube-scheduler CPU per new pod", perPod(r.CPU["kube-scheduler"])},
		{"every process's CPU per new pod", perPod(r.CPU.Total())},
		{"API writes per new pod (claim and pod creates included)", fmt.Sprintf("%.2f", r.Writes.Total()/float64(max(r.Bound, 1)))},
	}
}

// steadyRows are the node daemons' windows, one per row.
func (r *ScaleDRAResult) steadyRows() [][]string {
	cpu := func(w SteadyWindow, name string) string {
		return fmt.Sprintf("%.3f", w.perSecond(w.CPU[name].Seconds()))
	}
	rows := make([][]string, 0, len(r.Steady))
	for _, w := range r.Steady {
		daemons, churn := "none", "none"
		if w.Daemons {
			daemons = fmt.Sprintf("%d", r.Nodes)
		}
		if w.Churn {
			churn = fmt.Sprintf("%.1f", w.perSecond(float64(w.Churned)))
		}
		rows = append(rows, []string{daemons, churn, fmt.Sprintf("%.1f", w.perSecond(float64(w.Requests))),
			cpu(w, "kube-apiserver"), cpu(w, "etcd"), cpu(w, "kube-scheduler"), cpu(w, "bench")})
	}
	return rows
}

func steadyHeader() []string {
	return []string{"node daemons", "claims created and deleted a second", "daemon requests a second",
		"kube-apiserver CPU a second", "etcd CPU a second", "kube-scheduler CPU a second", "bench CPU a second"}
}

func (r *ScaleDRAResult) title() string {
	where := "every process sharing the CPUs"
	if r.Pinning != nil {
		where = r.Pinning.String()
	}
	settled := "once the control plane was idle"
	if !r.Quiet {
		settled = "with the control plane still busy"
	}
	return fmt.Sprintf("DRA at scale: %d nodes × %d GPUs, %d pods with their claims allocated, kube-scheduler alone (load average %s before the bench's writes, %s when kube-scheduler started, %s after them, %s); %s",
		r.Nodes, r.GPUsPerNode, r.Pods, r.LoadAtStart, r.Load, r.QuietAfter.Round(time.Second), settled, where)
}

func (r *ScaleDRAResult) notes() []string {
	notes := []string{
		"CPU time while the new pods were scheduled: " + r.CPU.String(),
		fmt.Sprintf("API writes per new pod, by resource: %s", r.Writes.PerPod(max(r.Bound, 1))),
	}
	if len(r.Steady) == 4 {
		notes = append(notes, r.daemonCost())
	}
	for _, w := range r.Steady {
		notes = append(notes, fmt.Sprintf("window of %s (daemons %t, churn %t), load average %s at its start: %s", w.Window, w.Daemons, w.Churn, w.Load, w.CPU.String()))
		if w.Requests > 0 {
			notes = append(notes, "  the daemons' requests by kind: "+w.ByKind.String())
		}
	}
	return notes
}

// daemonCost is kube-apiserver's CPU a second for the node daemons, the
// windows with them less those without, with no churn and with churn:
// measureSteady's windows in its order.
func (r *ScaleDRAResult) daemonCost() string {
	apiserver := func(w SteadyWindow) float64 { return w.perSecond(w.CPU["kube-apiserver"].Seconds()) }
	idle, churn, daemons, both := r.Steady[0], r.Steady[1], r.Steady[2], r.Steady[3]
	return fmt.Sprintf("kube-apiserver CPU a second for the node daemons: %.3f with no churn (%.3f − %.3f), %.3f with claims churning (%.3f − %.3f)",
		apiserver(daemons)-apiserver(idle), apiserver(daemons), apiserver(idle),
		apiserver(both)-apiserver(churn), apiserver(both), apiserver(churn))
}

// write writes both tables, as text or Markdown.
func (r *ScaleDRAResult) write(w io.Writer, markdown bool) error {
	if err := harness.WriteGrid(w, r.title(), []string{"measure", "value"}, r.rows(), nil, markdown); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	title := fmt.Sprintf("DRA node daemons' steady state, %d nodes, each window %s: a Lease renewed every %s and a ResourceSlice controller per node",
		r.Nodes, r.Window, r.Period)
	return harness.WriteGrid(w, title, steadyHeader(), r.steadyRows(), r.notes(), markdown)
}

// WriteText writes the tables with aligned columns.
func (r *ScaleDRAResult) WriteText(w io.Writer) error { return r.write(w, false) }

// WriteMarkdown writes the tables in Markdown.
func (r *ScaleDRAResult) WriteMarkdown(w io.Writer) error { return r.write(w, true) }
