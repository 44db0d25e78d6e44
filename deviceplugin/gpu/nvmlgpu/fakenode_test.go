package nvmlgpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

func newFakeNode(t *testing.T, configs ...gpus.Config) *nvmlfake.Node {
	t.Helper()
	n, err := nvmlfake.New(configs...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
