package options

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantErr string // empty: valid
	}{
		{name: "defaults are valid", mutate: func(*Config) {}},
		{name: "listen address without port", mutate: func(c *Config) { c.ListenAddress = "127.0.0.1" }, wantErr: "listenAddress"},
		{name: "listen address port out of range", mutate: func(c *Config) { c.ListenAddress = "127.0.0.1:70000" }, wantErr: "port must be a number from 0 to 65535"},
		{name: "the verbs on every interface are refused", mutate: func(c *Config) { c.ListenAddress = ":8888" },
			wantErr: `listenAddress: Invalid value: ":8888": is not a loopback address, and /bind, which binds any pod to any node, takes no credentials`},
		{name: "the verbs on the pod's address are refused", mutate: func(c *Config) { c.ListenAddress = "10.0.0.5:8888" }, wantErr: "set tlsCertFile, tlsKeyFile and clientCAFile"},
		{name: "TLS without a client check is not enough off loopback", mutate: func(c *Config) {
			c.ListenAddress, c.TLSCertFile, c.TLSKeyFile = "0.0.0.0:8888", "tls.crt", "tls.key"
		}, wantErr: "is not a loopback address"},
		{name: "off loopback with TLS and a client check", mutate: func(c *Config) {
			c.ListenAddress, c.TLSCertFile, c.TLSKeyFile, c.ClientCAFile = "0.0.0.0:8888", "tls.crt", "tls.key", "ca.crt"
		}},
		{name: "localhost and IPv6 loopback are loopback", mutate: func(c *Config) { c.ListenAddress, c.MetricsAddress = "localhost:8888", "[::1]:9403" }},
		{name: "a certificate without its key", mutate: func(c *Config) { c.TLSCertFile = "tls.crt" }, wantErr: "tlsCertFile: Required value: tlsCertFile and tlsKeyFile must be set together"},
		{name: "a client authority without TLS", mutate: func(c *Config) { c.ClientCAFile = "ca.crt" }, wantErr: "clientCAFile: Forbidden"},
		{name: "metrics on every interface are allowed", mutate: func(c *Config) { c.MetricsAddress = ":9403" }},
		{name: "metrics address off", mutate: func(c *Config) { c.MetricsAddress = "" }},
		{name: "metrics address without port", mutate: func(c *Config) { c.MetricsAddress = "0.0.0.0" }, wantErr: "metricsAddress: Invalid value: \"0.0.0.0\": must be host:port"},
		{name: "metrics address port out of range", mutate: func(c *Config) { c.MetricsAddress = ":99999" }, wantErr: "metricsAddress: Invalid value: \":99999\": port must be a number from 0 to 65535"},
		{name: "metrics address same as listen address", mutate: func(c *Config) { c.MetricsAddress = c.ListenAddress }, wantErr: "metricsAddress: Invalid value: \"127.0.0.1:8888\": must differ from listenAddress"},
		{name: "empty resource name", mutate: func(c *Config) { c.ResourceNames.Cores = "" }, wantErr: "resourceNames"},
		{name: "repeated resource name", mutate: func(c *Config) { c.ResourceNames.Cores = c.ResourceNames.Memory }, wantErr: "used twice"},
		{name: "empty scheduler name", mutate: func(c *Config) { c.SchedulerName = "" }, wantErr: "schedulerName: Required"},
		{name: "unknown node policy", mutate: func(c *Config) { c.DefaultNodePolicy = "random" }, wantErr: "defaultNodePolicy: Unsupported value"},
		{name: "unknown gpu policy", mutate: func(c *Config) { c.DefaultGPUPolicy = "" }, wantErr: "defaultGPUPolicy: Unsupported value"},
		{name: "lease namespace required", mutate: func(c *Config) { c.LeaseNamespace = "" }, wantErr: "leaseNamespace: Required value"},
		{name: "lease namespace must be a DNS label", mutate: func(c *Config) { c.LeaseNamespace = "a/b" }, wantErr: "leaseNamespace: Invalid value: \"a/b\""},
		{name: "heartbeat age below a second", mutate: func(c *Config) { c.HeartbeatMaxAge.Duration = time.Millisecond }, wantErr: "heartbeatMaxAge: Invalid value: \"1ms\": must be at least 1s"},
		{name: "zero bind wait", mutate: func(c *Config) { c.BindWaitTimeout.Duration = 0 }, wantErr: "bindWaitTimeout"},
		{name: "bind wait over the limit", mutate: func(c *Config) { c.BindWaitTimeout.Duration = time.Hour }, wantErr: "must be at most 5m0s"},
		{name: "zero in-flight ttl", mutate: func(c *Config) { c.InFlightTTL.Duration = 0 }, wantErr: "inFlightTTL"},
		{name: "sweep interval below a second", mutate: func(c *Config) { c.OrphanSweepInterval.Duration = time.Millisecond }, wantErr: "orphanSweepInterval"},
		{name: "zero qps", mutate: func(c *Config) { c.ClientQPS = 0 }, wantErr: "clientQPS"},
		{name: "zero burst", mutate: func(c *Config) { c.ClientBurst = 0 }, wantErr: "clientBurst"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			tc.mutate(c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, c *Config)
		wantErr string
	}{
		{
			name: "empty file keeps the defaults",
			yaml: "",
			check: func(t *testing.T, c *Config) {
				if *c != *NewConfig() {
					t.Fatalf("got %+v, want defaults", c)
				}
			},
		},
		{
			name: "fields override defaults and the rest stay",
			yaml: "defaultNodePolicy: spread\nbindWaitTimeout: 10s\nresourceNames:\n  count: example.com/gpu\n  memory: example.com/mem\n  memoryPercentage: example.com/pct\n  cores: example.com/cores\n",
			check: func(t *testing.T, c *Config) {
				if c.DefaultNodePolicy != gpurequest.Spread || c.BindWaitTimeout.Duration != 10*time.Second ||
					c.ResourceNames.Count != "example.com/gpu" || c.ListenAddress != DefaultListenAddress {
					t.Fatalf("got %+v", c)
				}
			},
		},
		{name: "unknown field is refused", yaml: "bindWait: 10s\n", wantErr: "unknown field \"bindWait\""},
		{name: "malformed duration is refused", yaml: "inFlightTTL: soon\n", wantErr: "inFlightTTL"},
		{name: "oversized file is refused", yaml: strings.Repeat("#", maxConfigFileBytes+1), wantErr: "must be at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestComplete(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("listenAddress: 127.0.0.1:9999\nmetricsAddress: :9500\ndefaultGPUPolicy: binpack\nbindWaitTimeout: 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    func(c *Config) bool
		wantErr string
	}{
		{
			name: "flags alone",
			args: []string{"--bind-wait-timeout=7s"},
			want: func(c *Config) bool { return c.BindWaitTimeout.Duration == 7*time.Second },
		},
		{
			name: "file values apply",
			args: []string{"--config", file},
			want: func(c *Config) bool {
				return c.ListenAddress == "127.0.0.1:9999" && c.MetricsAddress == ":9500" && c.DefaultGPUPolicy == gpurequest.Binpack && c.BindWaitTimeout.Duration == 10*time.Second
			},
		},
		{
			name: "a flag given on the command line beats the file wherever it stands",
			args: []string{"--bind-wait-timeout=3s", "--config", file},
			want: func(c *Config) bool {
				return c.BindWaitTimeout.Duration == 3*time.Second && c.ListenAddress == "127.0.0.1:9999"
			},
		},
		{
			name: "an empty --metrics-address turns off the file's metrics listener",
			args: []string{"--config", file, "--metrics-address="},
			want: func(c *Config) bool { return c.MetricsAddress == "" && c.ListenAddress == "127.0.0.1:9999" },
		},
		{name: "invalid metrics address names the field", args: []string{"--metrics-address=9403"}, wantErr: "metricsAddress"},
		{name: "invalid flag value fails validation", args: []string{"--default-node-policy=best"}, wantErr: "defaultNodePolicy"},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "absent.yaml")}, wantErr: "reading configuration file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Complete(fs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Complete() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(o.Config) {
				t.Fatalf("config = %+v", o.Config)
			}
		})
	}
}

// TestDefaultListenersAreLoopback pins that, with no flag or file, neither
// the verbs nor metrics are reachable from another machine.
func TestDefaultListenersAreLoopback(t *testing.T) {
	c := NewConfig()
	for name, address := range map[string]string{"listenAddress": c.ListenAddress, "metricsAddress": c.MetricsAddress} {
		host, _, err := net.SplitHostPort(address)
		if err != nil || !net.ParseIP(host).IsLoopback() {
			t.Errorf("default %s %q is not loopback", name, address)
		}
	}
}
