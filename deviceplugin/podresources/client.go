package podresources

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is where the kubelet serves its pod-resources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// callTimeout bounds one List: the kubelet answers from memory.
const callTimeout = 5 * time.Second

// maxMessageSize is the largest List answer read: a node with hundreds of
// pods and devices answers well under it.
const maxMessageSize = 16 << 20

// Client lists the kubelet's pods over its pod-resources socket.
type Client struct {
	socket string
	conn   *grpc.ClientConn
	lister podresourcesv1.PodResourcesListerClient
}

// New returns a client of the kubelet's pod-resources socket. It connects
// on first use, and again whenever the kubelet restarts.
func New(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("the kubelet's pod-resources socket %s: %w", socket, err)
	}
	return &Client{socket: socket, conn: conn, lister: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

// Pods returns the namespaced names of the pods the kubelet holds: those
// it has admitted and not yet seen end, and the one it is admitting.
// No socket at all is an error that wraps fs.ErrNotExist.
func (c *Client) Pods(ctx context.Context) (sets.Set[types.NamespacedName], error) {
	if _, err := os.Stat(c.socket); err != nil {
		return nil, fmt.Errorf("the kubelet's pod-resources socket: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the kubelet's pods through %s: %w", c.socket, err)
	}
	pods := sets.New[types.NamespacedName]()
	for _, p := range resp.GetPodResources() {
		pods.Insert(types.NamespacedName{Namespace: p.GetNamespace(), Name: p.GetName()})
	}
	return pods, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
