// Command warm compiles PDFium into a cache directory by reading one PDF with the crawler's reader,
// its workers being this program: pdftest.Warm builds and runs it without the race detector.
//
//	warm DIR SAMPLE.pdf
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/document/pdf"
)

func main() {
	pdf.Worker()
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: warm DIR SAMPLE.pdf")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "warm:", err)
		os.Exit(1)
	}
	r := pdf.NewReader(pdf.Config{CacheDir: os.Args[1], Instances: 1})
	defer r.Close()
	if _, err := r.Read(context.Background(), data, document.Limits{}); err != nil {
		fmt.Fprintln(os.Stderr, "warm: reading", os.Args[2]+":", err)
		os.Exit(1)
	}
}
