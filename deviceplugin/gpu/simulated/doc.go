// Package simulated is a GPU backend read from a file that lists GPUs, for
// clusters and tests without any. Health follows the file: it is read again
// periodically, so editing a GPU's health there marks it (un)healthy. So
// does the layout, when the plugin lists the GPUs again: editing a GPU's
// migInstances changes its MIG layout as nvidia-smi would.
package simulated
