//go:build !unix

package pdf

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's default where there is no mmap.
func memoryAllocator() experimental.MemoryAllocator { return nil }
