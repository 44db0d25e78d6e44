package harness

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// ModeGangs places gangs of GPU slices, each a PodGroup, with
// tessera-scheduler, and the same pods without a PodGroup.
const ModeGangs = "gangs"

// gangPods is gangs mode's --pods when the flag is not given: a multiple
// of both default sizes.
const gangPods = 2048

// maxGangSize bounds --gang-sizes.
const maxGangSize = 1000

// GangOptions are the flags of gangs mode.
type GangOptions struct {
	// Sizes are the gangs' sizes, one row each; every gang is a PodGroup
	// whose minCount is its size.
	Sizes []int
}

func defaultGangOptions() GangOptions { return GangOptions{Sizes: []int{8, 32}} }

func (g *GangOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntSliceVar(&g.Sizes, "gang-sizes", g.Sizes, fmt.Sprintf("Gangs mode: the sizes of the gangs, one row each (2 to %d, each dividing --pods); a last row places the same pods without a PodGroup.", maxGangSize))
}

// complete gives gangs mode its defaults: tessera-scheduler (row d) and
// gangPods pods unless --pods says otherwise.
func (g *GangOptions) complete(o *Options, fs *pflag.FlagSet) {
	if o.Mode != ModeGangs {
		return
	}
	o.Rows = []string{RowPlugin}
	if !fs.Changed("pods") {
		o.Pods = gangPods
	}
}

func (g *GangOptions) validate(pods int) error {
	for _, size := range g.Sizes {
		if size < 2 || size > maxGangSize {
			return fmt.Errorf("--gang-sizes=%s: %d must be from 2 to %d", g.flag(), size, maxGangSize)
		}
		if pods%size != 0 {
			return fmt.Errorf("--gang-sizes=%s: %d does not divide --pods=%d", g.flag(), size, pods)
		}
	}
	return nil
}

func (g *GangOptions) flag() string {
	s := make([]string, len(g.Sizes))
	for i, size := range g.Sizes {
		s[i] = fmt.Sprint(size)
	}
	return strings.Join(s, ",")
}
