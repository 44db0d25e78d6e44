// Package config holds the device plugin's configuration: what a node's
// operator may set in a file or on the command line, its defaults, and the
// checks that refuse a value before the plugin starts.
package config
