package driver

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// libraryDirs are where distributions and the GPU operator's driver
// container install the driver's libraries, relative to the driver root.
var libraryDirs = []string{
	"usr/lib64",
	"usr/lib/x86_64-linux-gnu",
	"usr/lib/aarch64-linux-gnu",
	"lib64",
	"lib/x86_64-linux-gnu",
	"lib/aarch64-linux-gnu",
	"usr/lib",
}

// binaryDirs hold the driver's tools, relative to the driver root.
var binaryDirs = []string{"usr/bin", "usr/local/bin", "bin"}

// libraries are the driver libraries a CUDA or NVML program loads, without
// the ".so.<driver version>" suffix.
var libraries = []string{
	"libcuda",
	"libcudadebugger",
	"libnvidia-ml",
	"libnvidia-ptxjitcompiler",
	"libnvidia-nvvm",
	"libnvidia-gpucomp",
	"libnvidia-cfg",
	"libnvidia-allocator",
	"libnvidia-opencl",
}

// binaries are the driver's tools a container may run.
var binaries = []string{"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"}

// nvmlLibrary is the NVML library's soname.
const nvmlLibrary = "libnvidia-ml.so.1"

// ErrNotFound says that a driver file is not under the root.
var ErrNotFound = errors.New("not found under the driver root")

// Root is the root of the driver's files, such as "/" for a driver
// installed on the host or "/run/nvidia/driver" for the GPU operator's.
type Root struct {
	// Path is where this process sees the root.
	Path string
	// HostPath is the root's path on the host, which is what a container
	// runtime mounts from.
	HostPath string
}

// File is one driver file to mount into a container.
type File struct {
	// HostPath is the file on the host.
	HostPath string
	// ContainerPath is where it appears in the container: its place
	// relative to the driver root.
	ContainerPath string
}

// NVMLLibrary returns the NVML library under the root, as this process
// sees it.
func (r Root) NVMLLibrary() (string, error) {
	for _, dir := range libraryDirs {
		path := filepath.Join(r.Path, dir, nvmlLibrary)
		// A link inside the root may be absolute, meaning the host's
		// path: resolve it within the root.
		if real, err := r.resolve(path); err == nil {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s: %w %s (searched %s)", nvmlLibrary, ErrNotFound, r.Path, strings.Join(libraryDirs, ", "))
}

// resolve follows the links of path, reading absolute links as relative
// to the root, and returns the regular file it names.
func (r Root) resolve(path string) (string, error) {
	for range 16 {
		fi, err := os.Lstat(path)
		if err != nil {
			return "", err
		}
		if fi.Mode().IsRegular() {
			return path, nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return "", fmt.Errorf("%s is not a regular file", path)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			path = filepath.Join(r.Path, target)
		} else {
			path = filepath.Join(filepath.Dir(path), target)
		}
	}
	return "", fmt.Errorf("%s: too many links", path)
}

// Files returns the libraries of the driver version and the driver's
// tools found under the root, each library also under its soname (the
// name programs load, such as libcuda.so.1), so that a container needs no
// links of its own. What is missing is left out: drivers differ in what
// they ship.
func (r Root) Files(version string) ([]File, error) {
	var files []File
	for _, lib := range libraries {
		name := lib + ".so." + version
		for _, dir := range libraryDirs {
			path := filepath.Join(r.Path, dir, name)
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			files = append(files, r.file(dir, name))
			if soname, err := soname(path); err == nil && soname != name {
				files = append(files, File{HostPath: r.file(dir, name).HostPath, ContainerPath: "/" + filepath.Join(dir, soname)})
			}
			break
		}
	}
	for _, bin := range binaries {
		for _, dir := range binaryDirs {
			if fi, err := os.Stat(filepath.Join(r.Path, dir, bin)); err == nil && fi.Mode().IsRegular() {
				files = append(files, r.file(dir, bin))
				break
			}
		}
	}
	if !slices.ContainsFunc(files, func(f File) bool { return strings.HasPrefix(filepath.Base(f.ContainerPath), "libcuda.so") }) {
		return files, fmt.Errorf("libcuda.so.%s: %w %s", version, ErrNotFound, r.Path)
	}
	return files, nil
}

func (r Root) file(dir, name string) File {
	return File{HostPath: filepath.Join(r.HostPath, dir, name), ContainerPath: "/" + filepath.Join(dir, name)}
}

// soname reads the ELF soname of a shared library.
func soname(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	names, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(names) == 0 {
		return "", fmt.Errorf("%s has no soname", path)
	}
	return names[0], nil
}
