// Package simulated is a GPU backend read from a file that lists GPUs, for
// clusters and tests without any. Health follows the file: it is read again
// periodically, so editing a GPU's health there marks it (un)healthy.
package simulated
