package app

import (
	"strings"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"

	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
)

func TestNewServerRefuses(t *testing.T) {
	files := func(o *Options) {
		o.TLSMode, o.CertFile, o.KeyFile = TLSModeFiles, "/nonexistent/tls.crt", "/nonexistent/tls.key"
	}
	tests := []struct {
		name    string
		edit    func(o *Options)
		deps    Dependencies
		wantErr string
	}{
		{name: "invalid options", edit: func(o *Options) { o.TLSMode = "" }, deps: Dependencies{Kube: kubefake.NewClientset(), Tessera: tesserafake.NewClientset()}, wantErr: "--tls-mode"},
		{name: "no clients", edit: func(*Options) {}, wantErr: "the Kubernetes and Tessera clients are required"},
		{name: "unreadable certificate", edit: files, deps: Dependencies{Kube: kubefake.NewClientset(), Tessera: tesserafake.NewClientset()}, wantErr: "loading the serving certificate: reading the certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.edit(o)
			_, err := NewServer(o, tc.deps)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewServer = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
