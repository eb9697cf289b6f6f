//go:build !linux

package pdf

import "syscall"

// Elsewhere a worker outlives a killed parent only until it reads the end
// of its stdin.
func sysProcAttr() *syscall.SysProcAttr { return nil }
