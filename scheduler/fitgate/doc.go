// Package fitgate answers, for a GPU request, whether any live node could
// hold it by its GPUs now, without a walk over the nodes: it is the index
// behind tessera-scheduler's fit gate, which keeps GPU pods that fit
// nowhere out of kube-scheduler's active queue.
//
// For each request shape asked about, the index keeps the nodes that could
// hold it: every node that could when the shape was first asked about, and
// every node the view's free signal (Freed) names since and that could
// then. A node is only ever added when it may have gained room, and taken
// out when asked and found full, so "could any node hold this" checks one
// node, or none when the cluster is full. The shapes are a cache: one not
// asked about for a while is forgotten, and built again from the view
// when asked about next, and every shape is built again from the view
// after RebuildAfter, so a free signal lost costs at most that long.
//
// The answer uses the same rules as every placement: the view's node
// rules (a node unavailable or closed to the request holds nothing) and
// placement's fit on the node's GPUs as the view holds them.
package fitgate
