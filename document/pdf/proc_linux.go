package pdf

import "syscall"

// A worker is killed when the thread that started it exits: Go keeps its
// threads for the process's life, so in practice when the parent dies.
// A worker also exits at the end of its stdin.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
