package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/worker"
)

// buildInfo is what pacer version prints.
type buildInfo struct {
	// BuildID is what a worker registers under (--build-id, else the
	// binary's); NamesBuild says a versioned worker may start with it.
	BuildID    string   `json:"buildId"`
	NamesBuild bool     `json:"namesBuild"`
	Version    string   `json:"deploymentVersion,omitempty"`
	Commit     string   `json:"commit"`
	Go         string   `json:"go"`
	Module     module   `json:"module"`
	Deps       []module `json:"dependencies"`
}

type module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

func newVersionCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the build ID this binary registers under, its commit and its Go module versions",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildInfo{BuildID: c.operating.buildID, NamesBuild: worker.NamesBuild(c.operating.buildID),
				Commit: worker.Commit(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Deps: []module{}}
			if d := c.operating.deployment(); d != nil {
				b.Version = d.Version()
			}
			if info, ok := debug.ReadBuildInfo(); ok {
				b.Module = module{info.Main.Path, info.Main.Version}
				for _, d := range info.Deps {
					if d.Replace != nil {
						d = d.Replace
					}
					b.Deps = append(b.Deps, module{d.Path, d.Version})
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), b)
			}
			w := cmd.OutOrStdout()
			id := b.BuildID
			switch {
			case !b.NamesBuild:
				id = fmt.Sprintf("%q: names no build, a versioned worker refuses to start", b.BuildID)
			case b.Version != "":
				id += " (registers as " + b.Version + ")"
			default:
				id += " (unversioned: --versioning=false)"
			}
			fmt.Fprintf(w, "build ID: %s\n", id)
			fmt.Fprintf(w, "commit:   %s\n", orDash(b.Commit))
			fmt.Fprintf(w, "go:       %s\n", b.Go)
			fmt.Fprintf(w, "module:   %s %s\n", b.Module.Path, b.Module.Version)
			for _, d := range b.Deps {
				fmt.Fprintf(w, "  %s %s\n", d.Path, d.Version)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
