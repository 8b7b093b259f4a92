//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, out of reach of
// the terminal's Ctrl-C.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
