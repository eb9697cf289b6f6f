//go:build !unix

package pdf

import (
	"github.com/klippa-app/go-pdfium"
	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator is wazero's default where there is no mmap: Go slices,
// which the garbage collector keeps while code runs on them.
func memoryAllocator() experimental.MemoryAllocator { return nil }

func pin(pdfium.Pdfium) func() { return func() {} }
