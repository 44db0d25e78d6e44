// Package options holds the scheduler extender's configuration: the file
// format, the command-line flags that override it, defaults and validation.
package options
