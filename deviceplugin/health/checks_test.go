package health

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestChecks(t *testing.T) {
	tests := []struct {
		name      string
		set       func(c *Checks)
		liveCode  int
		liveBody  string
		readyCode int
		readyBody string
	}{
		{
			name:     "nothing set passes",
			set:      func(*Checks) {},
			liveCode: http.StatusOK, liveBody: "ok", readyCode: http.StatusOK, readyBody: "ok",
		},
		{
			name: "a broken registration fails both",
			set: func(c *Checks) {
				c.Set(Registration, true, errors.New("the kubelet restarted"))
				c.Set(Discovery, true, nil)
			},
			liveCode: http.StatusInternalServerError, liveBody: "[-] kubelet-registration: the kubelet restarted\n",
			readyCode: http.StatusInternalServerError, readyBody: "[-] kubelet-registration: the kubelet restarted\n",
		},
		{
			name:     "no GPU fails only readiness",
			set:      func(c *Checks) { c.Set(GPUs, false, errors.New("no GPU")) },
			liveCode: http.StatusOK, liveBody: "ok",
			readyCode: http.StatusInternalServerError, readyBody: "[-] gpus: no GPU\n",
		},
		{
			name: "a check passes again",
			set: func(c *Checks) {
				c.Set(Registration, true, errors.New("waiting"))
				c.Set(Registration, true, nil)
			},
			liveCode: http.StatusOK, liveBody: "ok", readyCode: http.StatusOK, readyBody: "ok",
		},
		{
			name: "every failure is named, in order",
			set: func(c *Checks) {
				c.Set(Registration, true, errors.New("waiting"))
				c.Set(GPUs, false, errors.New("no GPU"))
				c.Set(Discovery, true, errors.New("NVML: driver not loaded"))
			},
			liveCode:  http.StatusInternalServerError,
			liveBody:  "[-] gpu-discovery: NVML: driver not loaded\n[-] kubelet-registration: waiting\n",
			readyCode: http.StatusInternalServerError,
			readyBody: "[-] gpu-discovery: NVML: driver not loaded\n[-] gpus: no GPU\n[-] kubelet-registration: waiting\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			tc.set(c)
			for _, probe := range []struct {
				name string
				h    http.Handler
				code int
				body string
			}{{"liveness", Handler(c.Live), tc.liveCode, tc.liveBody}, {"readiness", Handler(c.Ready), tc.readyCode, tc.readyBody}} {
				rec := httptest.NewRecorder()
				probe.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
				body, _ := io.ReadAll(rec.Body)
				if rec.Code != probe.code || string(body) != probe.body {
					t.Errorf("%s = %d %q, want %d %q", probe.name, rec.Code, body, probe.code, probe.body)
				}
			}
		})
	}
}
