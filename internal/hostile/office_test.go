package hostile

import (
	"archive/zip"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Each part of a hostile package reads back, through the zip reader and
// its CRC check, as exactly its head, units and tail.
func TestOfficeZipPartsDecodeToExactlyWhatTheySay(t *testing.T) {
	parts := []OfficePart{
		{Name: "repeated", Head: "<r>", Unit: "ab", Count: 1<<20 + 12345, Tail: "</r>"},
		{Name: "whole-segments", Unit: "\x00", Count: 2 << 20},
		{Name: "numbered", Head: "<n>", Count: 5000, Tail: "</n>", Nth: func(i int) string { return "<i>" + strconv.Itoa(i) + "</i>" }},
		{Name: "plain", Head: "<just/>"},
	}
	data := OfficeZip(parts...)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != len(parts) {
		t.Fatalf("%d entries, want %d", len(zr.File), len(parts))
	}
	for i, p := range parts {
		var want strings.Builder
		want.WriteString(p.Head)
		for n := range p.Count {
			if p.Nth != nil {
				want.WriteString(p.Nth(n))
			} else {
				want.WriteString(p.Unit)
			}
		}
		want.WriteString(p.Tail)
		rc, err := zr.File[i].Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || zr.File[i].Name != p.Name || string(got) != want.String() {
			t.Errorf("%s: %d bytes, %v; want %d bytes as built", p.Name, len(got), err, want.Len())
		}
	}
	if len(data) > 64<<10 {
		t.Errorf("the package is %d bytes: the repeated units were not compressed once", len(data))
	}
}
