package app

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(o *Options)
		wantErr string
	}{
		{name: "defaults are valid", edit: func(*Options) {}},
		{name: "files mode with both files", edit: func(o *Options) { o.TLSMode, o.CertFile, o.KeyFile = TLSModeFiles, "c", "k" }},
		{name: "listen address without a port", edit: func(o *Options) { o.ListenAddress = "localhost" }, wantErr: `--listen-address "localhost"`},
		{name: "metrics address without a port", edit: func(o *Options) { o.MetricsAddress = "x" }, wantErr: `--metrics-address "x"`},
		{name: "tiny body limit", edit: func(o *Options) { o.MaxRequestBytes = 100 }, wantErr: "--max-request-bytes 100: must be at least 65536"},
		{name: "unknown TLS mode", edit: func(o *Options) { o.TLSMode = "acme" }, wantErr: `--tls-mode "acme": must be "files" or "self-managed"`},
		{name: "files mode without files", edit: func(o *Options) { o.TLSMode = TLSModeFiles }, wantErr: "--tls-mode=files needs --tls-cert-file and --tls-private-key-file"},
		{name: "files mode without a reload interval", edit: func(o *Options) {
			o.TLSMode, o.CertFile, o.KeyFile, o.ReloadInterval = TLSModeFiles, "c", "k", 0
		}, wantErr: "--tls-reload-interval 0s: must be positive"},
		{name: "bad IP address", edit: func(o *Options) { o.IPAddresses = []string{"10.0.0.300"} }, wantErr: `--tls-ip-addresses: "10.0.0.300" is not an IP address`},
		{name: "self-managed without a namespace", edit: func(o *Options) { o.Namespace = "" }, wantErr: `--tls-mode=self-managed: namespace ""`},
		{name: "self-managed with nothing to cover", edit: func(o *Options) { o.ServiceName = "" }, wantErr: "at least one DNS name or IP address"},
		{name: "bad scheduler name", edit: func(o *Options) { o.Admission.SchedulerName = "Tessera Scheduler" }, wantErr: `scheduler name "Tessera Scheduler"`},
		{name: "bad DRA scheduler name", edit: func(o *Options) { o.Admission.DRASchedulerName = "Tessera DRA" }, wantErr: `DRA scheduler name "Tessera DRA"`},
		{name: "resource name used twice", edit: func(o *Options) { o.Admission.ResourceNames.Cores = "nvidia.com/gpu" }, wantErr: `"nvidia.com/gpu" is used twice`},
		{name: "bad opt-out label", edit: func(o *Options) { o.Admission.OptOutLabel = "no spaces" }, wantErr: `opt-out label "no spaces"`},
		{name: "bad fit gate scheduler", edit: func(o *Options) { o.Admission.FitGateSchedulers = []string{"tessera-scheduler", "Gate Me"} }, wantErr: `fit gate scheduler name "Gate Me"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.edit(o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestFlagsFillOptions(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--listen-address=127.0.0.1:9443", "--tls-mode=self-managed", "--namespace=gpu", "--service-name=hook",
		"--tls-ip-addresses=127.0.0.1,::1", "--tls-extra-dns-names=hook.example.com",
		"--scheduler-name=gpu-sched", "--resource-count=example.com/vgpu", "--resource-memory=example.com/vmem",
		"--resource-memory-percentage=example.com/vmem-pct", "--resource-cores=example.com/vcores",
		"--opt-out-label=example.com/skip", "--opt-out-value=yes", "--fit-gate-schedulers=gpu-sched,gpu-sched-b", "-v=4",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := gpurequest.ResourceNames{Count: "example.com/vgpu", Memory: "example.com/vmem", MemoryPercentage: "example.com/vmem-pct", Cores: "example.com/vcores"}
	if diff := cmp.Diff(want, o.Admission.ResourceNames); diff != "" {
		t.Errorf("resource names (-want +got):\n%s", diff)
	}
	if o.Admission.SchedulerName != "gpu-sched" || o.Admission.OptOutLabel != "example.com/skip" || o.Admission.OptOutValue != "yes" {
		t.Errorf("admission config = %+v", o.Admission)
	}
	if diff := cmp.Diff([]string{"gpu-sched", "gpu-sched-b"}, o.Admission.FitGateSchedulers); diff != "" {
		t.Errorf("fit gate schedulers (-want +got):\n%s", diff)
	}
	if o.Logs.Verbosity != 4 {
		t.Errorf("verbosity = %d, want 4", o.Logs.Verbosity)
	}
	cfg, err := o.selfManagedConfig()
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"hook", "hook.gpu", "hook.gpu.svc", "hook.gpu.svc.cluster.local", "hook.example.com"}
	if diff := cmp.Diff(wantNames, cfg.DNSNames); diff != "" {
		t.Errorf("DNS names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, cfg.IPs); diff != "" {
		t.Errorf("IPs (-want +got):\n%s", diff)
	}
}
