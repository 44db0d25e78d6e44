// Package httpserver builds and runs the HTTP servers of Tessera's daemons
// (the extender's, the webhook's, the device plugin's metrics server), so
// that every listener has the same protection against slow and idle
// clients: deadlines for the header, for the whole request body, for the
// answer and for an idle connection.
package httpserver
