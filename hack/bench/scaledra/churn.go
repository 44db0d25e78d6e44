package scaledra

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// claimChurn creates and deletes ResourceClaims at a rate, as pods come
// and go elsewhere in the cluster: each a claim of the workload's first
// shape, created and then deleted, two changes that every watcher of the
// cluster's claims is told of.
type claimChurn struct {
	kube kubernetes.Interface
	rate float64
	// next numbers the claims; done counts those created and deleted.
	next, done atomic.Int64
}

// churnClaimName is the name of the i-th churned claim.
func churnClaimName(i int64) string { return fmt.Sprintf("churn-%08d", i) }

// run churns claims until ctx ends, then waits for those in flight and
// returns the first error.
func (c *claimChurn) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(harness.MaxFinishing)
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
	defer tick.Stop()
	claims := c.kube.ResourceV1().ResourceClaims(harness.Namespace)
loop:
	for {
		select {
		case <-gctx.Done():
			break loop
		case <-tick.C:
		}
		name := churnClaimName(c.next.Add(1))
		g.Go(func() error {
			// The writes finish even as ctx ends, so that no claim is left.
			ctx := context.WithoutCancel(gctx)
			if _, err := claims.Create(ctx, harness.ResourceClaim(name, harness.DefaultMix()[0]), metav1.CreateOptions{FieldManager: harness.FieldManager}); err != nil {
				return fmt.Errorf("creating claim %s: %w", name, err)
			}
			if err := claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting claim %s: %w", name, err)
			}
			c.done.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
