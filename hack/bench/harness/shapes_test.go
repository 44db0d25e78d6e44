package harness

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSequenceFollowsTheWeights(t *testing.T) {
	mix := DefaultMix()
	total := 0
	for _, s := range mix {
		total += s.Weight
	}
	tests := []struct {
		name   string
		cycles int
	}{
		{name: "one full cycle holds each shape weight times", cycles: 1},
		{name: "many cycles hold each shape weight times per cycle", cycles: 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := map[string]int{}
			for _, s := range mix.Sequence(tt.cycles * total) {
				counts[s.Name]++
			}
			for _, s := range mix {
				if counts[s.Name] != s.Weight*tt.cycles {
					t.Errorf("shape %q appears %d times, want %d", s.Name, counts[s.Name], s.Weight*tt.cycles)
				}
			}
		})
	}
}

func TestSequenceInterleavesShapes(t *testing.T) {
	seq := DefaultMix().Sequence(200)
	run := 1
	for i := 1; i < len(seq); i++ {
		if seq[i].Name == seq[i-1].Name {
			run++
		} else {
			run = 1
		}
		// The heaviest shape has 30% of the weight: it comes at most twice
		// in a row (at a cycle's end and the next one's start).
		if run > 2 {
			t.Fatalf("shape %q comes %d times in a row at %d", seq[i].Name, run, i)
		}
	}
	if again := DefaultMix().Sequence(200); again[137] != seq[137] {
		t.Errorf("the sequence is not deterministic")
	}
}

func TestMixValidate(t *testing.T) {
	tests := []struct {
		name    string
		mix     Mix
		gpus    int
		wantErr string
	}{
		{name: "the default mix fits 8-GPU nodes", mix: DefaultMix(), gpus: 8},
		{name: "the default mix fits 4-GPU nodes", mix: DefaultMix(), gpus: 4},
		{name: "more GPUs than a node has", mix: Mix{{Name: "big", Count: 4, Weight: 1}}, gpus: 2, wantErr: "--gpus-per-node=2"},
		{name: "more memory than a GPU has", mix: Mix{{Name: "huge", Count: 1, MemoryMiB: GPUMemoryMiB + 1, Weight: 1}}, gpus: 8, wantErr: "81920 MiB"},
		{name: "cores over 100", mix: Mix{{Name: "greedy", Count: 1, Cores: 101, Weight: 1}}, gpus: 8, wantErr: "cores must be from 0 to 100"},
		{name: "zero weight", mix: Mix{{Name: "never", Count: 1}}, gpus: 8, wantErr: "weight 0 must be positive"},
		{name: "no shapes", mix: Mix{}, gpus: 8, wantErr: "no shapes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.mix.Validate(tt.gpus)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestGPULimits(t *testing.T) {
	q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	tests := []struct {
		name  string
		shape Shape
		form  PodForm
		want  corev1.ResourceList
	}{
		{name: "memory fraction", shape: Shape{Count: 1, MemoryMiB: 8192},
			want: corev1.ResourceList{"nvidia.com/gpu": q(1), "nvidia.com/gpumem": q(8192)}},
		{name: "memory and cores", shape: Shape{Count: 1, MemoryMiB: 20480, Cores: 30},
			want: corev1.ResourceList{"nvidia.com/gpu": q(1), "nvidia.com/gpumem": q(20480), "nvidia.com/gpucores": q(30)}},
		{name: "whole GPUs ask for the count only", shape: Shape{Count: 2},
			want: corev1.ResourceList{"nvidia.com/gpu": q(2)}},
		{name: "without an extender a fraction asks for its count only", shape: Shape{Count: 4, MemoryMiB: 16384, Cores: 50}, form: formWholeGPU,
			want: corev1.ResourceList{"nvidia.com/gpu": q(4)}},
		{name: "through a claim no extended resource is asked for", shape: Shape{Count: 4, MemoryMiB: 16384, Cores: 50}, form: FormClaim,
			want: corev1.ResourceList{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GPULimits(tt.shape, tt.form)
			if len(got) != len(tt.want) {
				t.Fatalf("gpuLimits = %v, want %v", got, tt.want)
			}
			for name, want := range tt.want {
				if g, ok := got[name]; !ok || g.Cmp(want) != 0 {
					t.Errorf("%s = %v, want %v", name, got[name], want.String())
				}
			}
		})
	}
}

func TestNewPodAsksForTheProfile(t *testing.T) {
	pod := NewPod("p", "tessera-scheduler", Shape{Count: 1, MemoryMiB: 1024}, FormSlices)
	if pod.Spec.SchedulerName != "tessera-scheduler" || pod.Namespace != Namespace {
		t.Errorf("pod has scheduler %q in namespace %q", pod.Spec.SchedulerName, pod.Namespace)
	}
	if _, ok := pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpumem"]; !ok {
		t.Errorf("pod does not ask for GPU memory: %v", pod.Spec.Containers[0].Resources.Limits)
	}
}
