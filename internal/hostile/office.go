package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// OfficePart is one entry of a hostile Office package: Head, then Unit
// Count times (or Nth(i) for each i below Count, where the units must
// differ), then Tail. Repeated units are compressed once, so a part of
// hundreds of megabytes is a few hundred kilobytes in the zip, as an
// attacker sends it; parts whose units differ compress as they come.
type OfficePart struct {
	Name       string
	Head, Tail string
	Unit       string
	Nth        func(i int) string
	Count      int
}

// OfficeZip is a zip package of the parts, each deflated, with the sizes
// and CRC-32 a zip reader checks.
func OfficeZip(parts ...OfficePart) []byte {
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, p := range parts {
		raw, crc, size := p.deflate()
		w, err := zw.CreateRaw(&zip.FileHeader{Name: p.Name, Method: zip.Deflate, CRC32: crc,
			CompressedSize64: uint64(len(raw)), UncompressedSize64: uint64(size)})
		if err != nil {
			panic(err) // only a header zip cannot write, which these are not
		}
		w.Write(raw)
	}
	zw.Close()
	return out.Bytes()
}

func (p OfficePart) deflate() ([]byte, uint32, int64) {
	if p.Nth == nil {
		return deflateRun(p.Head, p.Unit, p.Count, p.Tail)
	}
	var s stream
	s.segment(p.Head)
	fw, _ := flate.NewWriter(&s.out, flate.BestSpeed)
	var unit []byte
	for i := range p.Count {
		unit = append(unit[:0], p.Nth(i)...)
		fw.Write(unit)
		s.count(unit)
	}
	fw.Flush()
	s.segment(p.Tail)
	return s.end()
}

// stream is a raw deflate stream built segment by segment, each ended by
// a sync flush and referring to nothing before it, so that a segment may
// be repeated; and the CRC-32 and length of what it decodes to.
type stream struct {
	out  bytes.Buffer
	crc  uint32
	size int64
}

func (s *stream) count(b []byte) {
	s.crc = crc32.Update(s.crc, crc32.IEEETable, b)
	s.size += int64(len(b))
}

// segment compresses b as a segment of its own and is that segment.
func (s *stream) segment(b string) []byte {
	start := s.out.Len()
	if b != "" {
		w, _ := flate.NewWriter(&s.out, flate.BestCompression)
		w.Write([]byte(b))
		w.Flush()
		s.count([]byte(b))
	}
	return s.out.Bytes()[start:]
}

// end closes the stream with an empty final block.
func (s *stream) end() ([]byte, uint32, int64) {
	w, _ := flate.NewWriter(&s.out, flate.BestCompression)
	w.Close()
	return s.out.Bytes(), s.crc, s.size
}

// deflateRun is a raw deflate stream of head, n copies of unit, then tail,
// with the CRC-32 and length of what it decodes to. The copies are
// compressed once, as a segment of about 1 MiB that is then repeated: a
// run of gigabytes costs megabytes and the time of its CRC.
func deflateRun(head, unit string, n int, tail string) ([]byte, uint32, int64) {
	var s stream
	s.segment(head)
	if n > 0 {
		per := max(1, (1<<20)/len(unit))
		block := []byte(strings.Repeat(unit, min(per, n)))
		seg := bytes.Clone(s.segment(string(block)))
		for n -= min(per, n); n >= per; n -= per {
			s.out.Write(seg)
			s.count(block)
		}
		s.segment(strings.Repeat(unit, n))
	}
	s.segment(tail)
	return s.end()
}

const (
	nsWord        = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	nsSpreadsheet = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
	nsOfficeRels  = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	nsPackageRels = "http://schemas.openxmlformats.org/package/2006/relationships"
)

// docx is a Word file whose document.xml holds a paragraph, "before", then
// body's head, units and tail; more are its other parts.
func docx(body OfficePart, more ...OfficePart) []byte {
	body.Name = "word/document.xml"
	body.Head = `<w:document xmlns:w="` + nsWord + `" xmlns:r="` + nsOfficeRels + `"><w:body><w:p><w:r><w:t>before</w:t></w:r></w:p>` + body.Head
	body.Tail += `</w:body></w:document>`
	types := OfficePart{Name: "[Content_Types].xml", Head: `<Types><Override PartName="/word/document.xml" ` +
		`ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`}
	return OfficeZip(append([]OfficePart{types, body}, more...)...)
}

// DocxTextRun is a Word file whose second paragraph is one text run of
// size bytes: 250 MiB of it are some 256 KB of docx.
func DocxTextRun(size int) []byte {
	return docx(OfficePart{Head: "<w:p><w:r><w:t>", Unit: "a", Count: size, Tail: "</w:t></w:r></w:p>"})
}

// DocxAttribute is a Word file whose second paragraph's text element has
// an attribute of size bytes.
func DocxAttribute(size int) []byte {
	return docx(OfficePart{Head: `<w:p><w:r><w:t w:x="`, Unit: "a", Count: size, Tail: `">after</w:t></w:r></w:p>`})
}

// DocxRelationships is a Word file whose document has n relationships to
// external targets, each of its own, none of them used.
func DocxRelationships(n int) []byte {
	return docx(OfficePart{Head: "<w:p><w:r><w:t>x</w:t></w:r></w:p>"}, OfficePart{
		Name: "word/_rels/document.xml.rels", Head: `<Relationships xmlns="` + nsPackageRels + `">`, Tail: "</Relationships>",
		Count: n, Nth: func(i int) string {
			id := strconv.Itoa(i)
			return `<Relationship Id="r` + id + `" Type="h" Target="https://example.org/` + id + `" TargetMode="External"/>`
		}})
}

// DocxPropertyNames is a Word file whose core properties are n elements
// of names of their own.
func DocxPropertyNames(n int) []byte {
	return docx(OfficePart{Head: "<w:p><w:r><w:t>x</w:t></w:r></w:p>"}, OfficePart{
		Name: "docProps/core.xml", Head: `<cp:coreProperties xmlns:cp="c">`, Tail: "</cp:coreProperties>",
		Count: n, Nth: func(i int) string { return fmt.Sprintf("<p%d>v</p%d>", i, i) }})
}

// DocxFieldLinks is a Word file of n HYPERLINK fields, each to a URL of
// its own.
func DocxFieldLinks(n int) []byte {
	return docx(OfficePart{Head: "<w:p>", Tail: "</w:p>", Count: n, Nth: func(i int) string {
		return `<w:fldSimple w:instr="HYPERLINK https://example.org/` + strconv.Itoa(i) + `"/>`
	}})
}

// XlsxSharedStrings is a workbook of one sheet whose string table has n
// entries, "first" then "x"; the sheet's cells are the first and the last.
func XlsxSharedStrings(n int) []byte {
	return OfficeZip(
		OfficePart{Name: "[Content_Types].xml", Head: `<Types><Override PartName="/xl/workbook.xml" ` +
			`ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>`},
		OfficePart{Name: "xl/workbook.xml", Head: `<workbook xmlns="` + nsSpreadsheet + `" xmlns:r="` + nsOfficeRels + `">` +
			`<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		OfficePart{Name: "xl/_rels/workbook.xml.rels", Head: `<Relationships xmlns="` + nsPackageRels + `">` +
			`<Relationship Id="rId1" Type="` + nsOfficeRels + `/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="` + nsOfficeRels + `/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		OfficePart{Name: "xl/worksheets/sheet1.xml", Head: fmt.Sprintf(`<worksheet xmlns="%s"><sheetData><row r="1">`+
			`<c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>%d</v></c></row></sheetData></worksheet>`, nsSpreadsheet, n-1)},
		OfficePart{Name: "xl/sharedStrings.xml", Head: `<sst xmlns="` + nsSpreadsheet + `"><si><t>first</t></si>`,
			Unit: "<si><t>x</t></si>", Count: n - 1, Tail: "</sst>"})
}
