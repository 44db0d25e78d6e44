// Package clientlib holds tests that use Tessera's client library from
// outside its module, as another program would.
package clientlib
