package pdf

import "syscall"

// mapNoReserve keeps Linux from counting a sandbox's whole reservation
// against the commit limit.
const mapNoReserve = syscall.MAP_NORESERVE
