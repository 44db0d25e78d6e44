package config

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := func() Configuration {
		c := Default()
		c.NodeName = "node-1"
		return c
	}
	tests := []struct {
		name   string
		mutate func(*Configuration)
		want   string // empty: valid
	}{
		{name: "defaults with a node name are valid", mutate: func(*Configuration) {}},
		{name: "library with preload file", mutate: func(c *Configuration) { c.LibraryPath = "/opt/libvgpu.so"; c.PreloadFile = "/opt/p" }},
		{name: "node name required", mutate: func(c *Configuration) { c.NodeName = "" }, want: "nodeName: Required value"},
		{name: "node name must be a DNS subdomain", mutate: func(c *Configuration) { c.NodeName = "Node_1" }, want: "nodeName: Invalid value"},
		{name: "split count at least 1", mutate: func(c *Configuration) { c.SplitCount = 0 }, want: "splitCount: Invalid value: 0: must be between 1 and 1024"},
		{name: "split count at most 1024", mutate: func(c *Configuration) { c.SplitCount = 1025 }, want: "splitCount: Invalid value: 1025: must be between 1 and 1024"},
		{name: "memory scaling positive", mutate: func(c *Configuration) { c.MemoryScaling = 0 }, want: "memoryScaling: Invalid value: 0: must be greater than 0 and at most 100"},
		{name: "core scaling bounded by the API's 10000 cores", mutate: func(c *Configuration) { c.CoreScaling = 101 }, want: "coreScaling: Invalid value: 101: must be greater than 0 and at most 100"},
		{name: "resource name required", mutate: func(c *Configuration) { c.ResourceName = "" }, want: "resourceName: Required value"},
		{name: "resource name must be qualified", mutate: func(c *Configuration) { c.ResourceName = "nvidia.com/gpu/x" }, want: "resourceName: Invalid value"},
		{name: "DRA mode with its directories", mutate: func(c *Configuration) { c.Mode = ModeDRA }},
		{name: "mode is one of the modes", mutate: func(c *Configuration) { c.Mode = "extender" }, want: `mode: Unsupported value: "extender": supported values: "device-plugin", "dra"`},
		{name: "DRA mode makes MIG instances on demand", mutate: func(c *Configuration) { c.Mode = ModeDRA; c.DynamicMIG = true }},
		{name: "MIG instances made on demand are not in a CDI spec", mutate: func(c *Configuration) {
			c.DynamicMIG, c.DeviceListStrategy, c.CDISpecDir = true, StrategyCDI, "/var/run/cdi"
		}, want: "deviceListStrategy: Invalid value: \"cdi\": not supported with dynamicMIG"},
		{name: "DRA mode has no volume-mounts strategy", mutate: func(c *Configuration) { c.Mode = ModeDRA; c.DeviceListStrategy = StrategyVolumeMounts }, want: "deviceListStrategy: Invalid value"},
		{name: "DRA directories absolute in DRA mode", mutate: func(c *Configuration) { c.Mode = ModeDRA; c.CDISpecDir = "cdi" }, want: `cdiSpecDir: Invalid value: "cdi": must be an absolute path`},
		{name: "plugin dir absolute", mutate: func(c *Configuration) { c.PluginDir = "plugins" }, want: "pluginDir: Invalid value: \"plugins\": must be an absolute path"},
		{name: "plugin dir leaves room for its sockets", mutate: func(c *Configuration) { c.PluginDir = "/" + strings.Repeat("d", 79) },
			want: "pluginDir: Invalid value: \"/" + strings.Repeat("d", 79) + "\": the socket tessera-nvidia.com-gpu.sock in it would be a path of 108 bytes"},
		{name: "a plugin dir with the longest socket path that binds", mutate: func(c *Configuration) { c.PluginDir = "/" + strings.Repeat("d", 78) }},
		{name: "DRA registry dir leaves room for its socket", mutate: func(c *Configuration) { c.Mode = ModeDRA; c.PluginRegistryDir = "/" + strings.Repeat("r", 100) },
			want: "the socket gpu.tessera.dev-reg.sock in it would be a path of 126 bytes, more than the 107 a Unix socket path may have"},
		{name: "library path absolute", mutate: func(c *Configuration) { c.LibraryPath = "libvgpu.so" }, want: "libraryPath: Invalid value"},
		{name: "container library path needed with a library", mutate: func(c *Configuration) { c.LibraryPath = "/l.so"; c.LibraryContainerPath = "" }, want: "libraryContainerPath: Required value"},
		{name: "every device-list strategy is valid", mutate: func(c *Configuration) { c.DeviceListStrategy = StrategyVolumeMounts }},
		{name: "cdi with its spec directory", mutate: func(c *Configuration) { c.DeviceListStrategy = StrategyCDI; c.DriverRoot = "/driver-root" }},
		{name: "unknown device-list strategy", mutate: func(c *Configuration) { c.DeviceListStrategy = "mounts" },
			want: `deviceListStrategy: Unsupported value: "mounts": supported values: "envvar", "volume-mounts", "cdi"`},
		{name: "cdi needs a spec directory", mutate: func(c *Configuration) { c.DeviceListStrategy = StrategyCDI; c.CDISpecDir = "" }, want: "cdiSpecDir: Required value"},
		{name: "driver root absolute", mutate: func(c *Configuration) { c.DriverRoot = "driver" }, want: `driverRoot: Invalid value: "driver": must be an absolute path`},
		{name: "lease namespace required", mutate: func(c *Configuration) { c.LeaseNamespace = "" }, want: "leaseNamespace: Required value"},
		{name: "lease namespace must be a DNS label", mutate: func(c *Configuration) { c.LeaseNamespace = "Tessera.System" }, want: "leaseNamespace: Invalid value: \"Tessera.System\""},
		{name: "heartbeat not too short", mutate: func(c *Configuration) { c.HeartbeatPeriod.Duration = time.Millisecond }, want: "heartbeatPeriod: Invalid value: \"1ms\": must be at least 100ms"},
		{name: "rescan not so often that NVML is asked all the time", mutate: func(c *Configuration) { c.RescanPeriod.Duration = 500 * time.Millisecond },
			want: "rescanPeriod: Invalid value: \"500ms\": must be at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPreloadFilePath(t *testing.T) {
	c := Default()
	if got := c.PreloadFilePath(); got != "" {
		t.Errorf("no library: preload %q, want none", got)
	}
	c.LibraryPath = "/usr/local/vgpu/libvgpu.so"
	if got := c.PreloadFilePath(); got != "/usr/local/vgpu/ld.so.preload" {
		t.Errorf("preload %q, want it beside the library", got)
	}
	c.PreloadFile = "/etc/tessera/preload"
	if got := c.PreloadFilePath(); got != "/etc/tessera/preload" {
		t.Errorf("preload %q, want the configured file", got)
	}
}
