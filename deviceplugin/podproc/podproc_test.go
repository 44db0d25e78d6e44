package podproc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

const uid = types.UID("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")

func TestParseCgroup(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    types.UID
	}{
		{name: "cgroup v2 systemd driver", content: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4e5f_6071_8293_a4b5c6d7e8f9.slice/cri-containerd-abc.scope\n", want: uid},
		{name: "cgroup v2 systemd guaranteed pod", content: "0::/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6071_8293_a4b5c6d7e8f9.slice/cri-containerd-abc.scope\n", want: uid},
		{name: "cgroup v2 cgroupfs driver", content: "0::/kubepods/besteffort/pod0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9/0123456789abcdef\n", want: uid},
		{name: "cgroup v1 finds the pod in any hierarchy", content: "12:pids:/\n11:memory:/kubepods/burstable/pod0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9/abc\n", want: uid},
		{name: "host process", content: "0::/system.slice/sshd.service\n"},
		{name: "a word that merely starts with pod", content: "0::/user.slice/podman-1234.scope\n"},
		{name: "empty", content: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCgroup([]byte(tt.content)); got != tt.want {
				t.Errorf("ParseCgroup = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolverReadsProc(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "42", "cgroup"), []byte("0::/kubepods/burstable/pod"+string(uid)+"/c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Resolver{ProcRoot: root}
	if got, err := r.PodUID(42); err != nil || got != uid {
		t.Errorf("PodUID(42) = %q, %v; want %q", got, err, uid)
	}
	if _, err := r.PodUID(43); !errors.Is(err, ErrNoProcess) {
		t.Errorf("PodUID of an exited process: %v, want ErrNoProcess", err)
	}
}
