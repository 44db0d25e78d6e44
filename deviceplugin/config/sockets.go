package config

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dpserver"
)

// MaxSocketPath is the longest path a Unix socket can be bound at on
// Linux: sun_path holds 108 bytes, the last of them the terminating NUL.
// A longer path fails only when the socket is bound, with "bind: invalid
// argument", so the directories that hold sockets are checked up front.
const MaxSocketPath = 107

// The DRA sockets, named as the kubelet plugin helper names them by
// default: the plugin's own in draPluginDir, its registration in
// pluginRegistryDir.
const (
	draSocket          = "dra.sock"
	draRegistrarSocket = gpuv1alpha1.DRADriverName + "-reg.sock"
)

// socketDir is a configured directory and the sockets bound in it.
type socketDir struct {
	path    *field.Path
	dir     string
	sockets []string
}

// socketPaths returns an error for each configured directory in which a
// socket the daemon or the kubelet binds would be too long a path.
func (c *Configuration) socketPaths() field.ErrorList {
	dirs := []socketDir{{field.NewPath("pluginDir"), c.PluginDir, []string{dpserver.KubeletSocket, dpserver.SocketName(c.ResourceName)}}}
	if c.Mode == ModeDRA {
		dirs = append(dirs,
			socketDir{field.NewPath("draPluginDir"), c.DRAPluginDir, []string{draSocket}},
			socketDir{field.NewPath("pluginRegistryDir"), c.PluginRegistryDir, []string{draRegistrarSocket}})
	}
	var errs field.ErrorList
	for _, d := range dirs {
		if !filepath.IsAbs(d.dir) {
			continue // absolute() reports it
		}
		for _, name := range d.sockets {
			if p := filepath.Join(d.dir, name); len(p) > MaxSocketPath {
				errs = append(errs, field.Invalid(d.path, d.dir, fmt.Sprintf(
					"the socket %s in it would be a path of %d bytes, more than the %d a Unix socket path may have: use a shorter directory",
					name, len(p), MaxSocketPath)))
				break
			}
		}
	}
	return errs
}
