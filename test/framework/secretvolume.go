package framework

import (
	"context"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mountSecret plays the kubelet's Secret volume for p, a process that
// runs outside the cluster but expects a Secret's keys as files in dir:
// it writes them there once the Secret has data, and again whenever it
// changes, until p exits. Kueue's certificate management, for one, writes
// its certificate only into the Secret and waits for the files.
func (cp *ControlPlane) mountSecret(p *Process, namespace, name, dir string) {
	go func() {
		interval := 200 * time.Millisecond
		written := ""
		for {
			select {
			case <-p.done:
				return
			case <-time.After(interval):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			secret, err := cp.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
			cancel()
			if err != nil || len(secret.Data) == 0 || secret.ResourceVersion == written {
				continue
			}
			if writeSecretFiles(dir, secret.Data) == nil {
				// Once written, only a rotation changes it.
				written, interval = secret.ResourceVersion, 2*time.Second
			}
		}
	}()
}

// writeSecretFiles writes each key as a file of dir, each replaced whole
// so that a reader never sees half a certificate.
func writeSecretFiles(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for key, value := range data {
		tmp := filepath.Join(dir, "."+key+".tmp")
		if err := os.WriteFile(tmp, value, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, key)); err != nil {
			return err
		}
	}
	return nil
}
