// Package vdevice names the virtual devices the plugin offers the kubelet:
// each physical GPU appears as split-count devices "<uuid>::<n>", so that
// the kubelet's count resource admits that many containers per GPU.
package vdevice

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

const separator = "::"

// ID returns the n-th virtual device of the GPU.
func ID(uuid string, n int) string { return uuid + separator + strconv.Itoa(n) }

// Parse splits a virtual device ID. ok is false for an ID the plugin did not
// make.
func Parse(id string) (uuid string, n int, ok bool) {
	uuid, num, found := strings.Cut(id, separator)
	if !found || uuid == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return uuid, n, true
}

// Sort orders IDs by GPU, then by number (so "x::2" comes before "x::10").
// IDs the plugin did not make come last, by name.
func Sort(ids []string) {
	slices.SortFunc(ids, func(a, b string) int {
		ua, na, oka := Parse(a)
		ub, nb, okb := Parse(b)
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case !oka:
			return strings.Compare(a, b)
		}
		return cmp.Or(strings.Compare(ua, ub), cmp.Compare(na, nb))
	})
}
