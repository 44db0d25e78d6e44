package hamicore

// PreloadContainerPath is where the preload file appears in the container.
const PreloadContainerPath = "/etc/ld.so.preload"

// Library says where the HAMi-core library is on the node and where it
// appears in containers.
type Library struct {
	// HostPath is the library on the node; empty: no library is mounted.
	HostPath string
	// ContainerPath is where the library appears in the container.
	ContainerPath string
	// PreloadHostPath is the node file mounted as /etc/ld.so.preload.
	PreloadHostPath string
}

// Mount is a read-only bind mount of a node file into a container.
type Mount struct {
	// HostPath is the file on the node.
	HostPath string
	// ContainerPath is where it appears in the container.
	ContainerPath string
}

// Mounts returns the library and the preload file that loads it into every
// process, or none when no library is configured.
func (l Library) Mounts() []Mount {
	if l.HostPath == "" {
		return nil
	}
	return []Mount{
		{HostPath: l.HostPath, ContainerPath: l.ContainerPath},
		{HostPath: l.PreloadHostPath, ContainerPath: PreloadContainerPath},
	}
}
