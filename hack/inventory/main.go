// Command inventory prints every GPU that Tessera knows of, with its capacity
// and what is allocated on it, by the extender or, in DRA mode, by
// kube-scheduler. It reads the cluster through Tessera's
// generated clientset, informers and listers, as any other Go program can:
//
//	go run ./hack/inventory --kubeconfig ~/.kube/config
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	flags := flag.NewFlagSet("inventory", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig; empty for in-cluster")
	timeout := flags.Duration("timeout", 30*time.Second, "how long to wait for the cluster's state")
	if err := flags.Parse(args); err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %q: %w", *kubeconfig, err)
	}
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	nodes := factory.Gpu().V1alpha1().GPUNodes()
	allocations := factory.Gpu().V1alpha1().GPUAllocations()
	nodes.Informer()
	allocations.Informer()
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop only once ctx is done.
	defer func() { cancel(); factory.Shutdown() }()
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("reading %v from the API server: %w", typ, context.Cause(ctx))
		}
	}

	gpuNodes, err := nodes.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	allocs, err := allocations.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	// DRA allocations live in ResourceClaims, which only the API server
	// holds; a cluster without DRA has none to list.
	list, err := kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	claims := make([]*resourceapi.ResourceClaim, 0, len(list.Items))
	for i := range list.Items {
		claims = append(claims, &list.Items[i])
	}
	return printInventory(out, buildInventory(gpuNodes, allocs, claims))
}
