// Package nodestatus publishes the node's GPUNode: it creates the object
// when absent and keeps its status (devices after scaling, display
// summary, Ready condition, heartbeat) current through server-side apply on
// the status subresource.
package nodestatus
