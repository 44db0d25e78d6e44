package framework

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"

	"k8s.io/client-go/rest"
)

// SchedulerClient reaches a running scheduler's secure port, where it
// serves /metrics and /debug/pprof, as the control plane's admin, whose
// client certificate the scheduler checks through kube-apiserver like any
// delegated authentication.
type SchedulerClient struct {
	// Client authenticates as the admin.
	Client *http.Client
	// Base is the scheduler's https://host:port.
	Base string
}

// NewSchedulerClient finds the secure port of the scheduler process pid
// on its command line, where the framework gave it.
func NewSchedulerClient(cp *ControlPlane, pid int) (*SchedulerClient, error) {
	port, err := securePort(pid)
	if err != nil {
		return nil, err
	}
	config := rest.CopyConfig(cp.Config)
	config.Host = "https://127.0.0.1:" + strconv.Itoa(port)
	// The scheduler serves a certificate it signed itself.
	config.Insecure, config.CAData, config.CAFile = true, nil, ""
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("a client for the scheduler's secure port: %w", err)
	}
	return &SchedulerClient{Client: client, Base: config.Host}, nil
}

// securePort reads --secure-port from a process's command line.
func securePort(pid int) (int, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the scheduler's command line: %w", err)
	}
	const flag = "--secure-port="
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if v, ok := bytes.CutPrefix(arg, []byte(flag)); ok {
			return strconv.Atoi(string(v))
		}
	}
	return 0, fmt.Errorf("process %d has no %s flag", pid, flag)
}
