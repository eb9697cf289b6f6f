package office

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/crawlspace/crawlspace/document"
)

var fixtures = []struct {
	file string
	kind Kind
	ref  string // LibreOffice's own text of it
}{
	{"text.docx", DOCX, "text.ref.txt"},
	{"text.odt", ODT, "text.ref.txt"},
	{"sheets.xlsx", XLSX, "sheets.ref.txt"},
	{"sheets.ods", ODS, "sheets.ref.txt"},
	{"slides.pptx", PPTX, "slides.ref.txt"},
	{"slides.odp", ODP, "slides.ref.txt"},
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t testing.TB, k Kind, data []byte, lim document.Limits) *document.Content {
	t.Helper()
	c, err := NewReader(k).Read(context.Background(), data, lim)
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return c
}

func readErr(t *testing.T, k Kind, data []byte, lim document.Limits) error {
	t.Helper()
	c, err := NewReader(k).Read(context.Background(), data, lim)
	if err == nil {
		t.Fatalf("%s: no error, body %q", k, c.Body)
	}
	return err
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// recall is the share of the reference's words (with repeats) the body has.
func recall(ref, body string) float64 {
	have := map[string]int{}
	for _, w := range words(body) {
		have[w]++
	}
	rw := words(ref)
	found := 0
	for _, w := range rw {
		if have[w] > 0 {
			have[w]--
			found++
		}
	}
	return float64(found) / float64(len(rw))
}

// inOrder is the share of the reference's words found in the body in the
// reference's order (a greedy subsequence match).
func inOrder(ref, body string) float64 {
	bw, rw := words(body), words(ref)
	pos, found := 0, 0
	for _, w := range rw {
		if i := slices.Index(bw[pos:], w); i >= 0 {
			pos += i + 1
			found++
		}
	}
	return float64(found) / float64(len(rw))
}

// rewrite is a copy of a zip with some entries changed, dropped (edit
// returns nil) or stored uncompressed.
func rewrite(t testing.TB, data []byte, method uint16, edits map[string]func(string) string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if edit := edits[f.Name]; edit != nil {
			b = []byte(edit(string(b)))
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestFixturesRecallLibreOfficeTextInOrder(t *testing.T) {
	for _, f := range fixtures {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		ref := string(fixture(t, f.ref))
		if r := recall(ref, c.Body); r < 0.97 {
			t.Errorf("%s: word recall %.3f < 0.97 against %s\n%s", f.file, r, f.ref, c.Body)
		}
		// The csv export lists sheets by name, not in workbook order: the
		// sheet order has a test of its own.
		if f.kind != XLSX && f.kind != ODS {
			if o := inOrder(ref, c.Body); o < 0.97 {
				t.Errorf("%s: %.3f of the words in reference order < 0.97\n%s", f.file, o, c.Body)
			}
		}
		if c.Truncated {
			t.Errorf("%s: truncated", f.file)
		}
	}
}

func TestMetadataFromCorePropertiesAndMetaXML(t *testing.T) {
	created := time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)
	modified := time.Date(2024, 5, 6, 17, 45, 10, 0, time.UTC)
	titles := map[string]string{"text": "Quarterly Report on Crawling", "sheets": "Crawl Budget Workbook", "slides": "Crawler Roadmap Slides"}
	subjects := map[string]string{"text": "Crawler operations in the first quarter", "sheets": "Pages and errors per site", "slides": "Where the crawler goes next"}
	for _, f := range fixtures {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		base := strings.TrimSuffix(f.file, "."+string(f.kind))
		if c.Title != titles[base] {
			t.Errorf("%s: title %q", f.file, c.Title)
		}
		if c.Subject != subjects[base] {
			t.Errorf("%s: subject %q", f.file, c.Subject)
		}
		if !slices.Equal(c.Authors, []string{"Zoë Ångström"}) {
			t.Errorf("%s: authors %q", f.file, c.Authors)
		}
		if c.Language != "de-DE" {
			t.Errorf("%s: language %q", f.file, c.Language)
		}
		if !c.Created.Equal(created) || !c.Modified.Equal(modified) {
			t.Errorf("%s: created %v modified %v", f.file, c.Created, c.Modified)
		}
		// LibreOffice joins OOXML keywords with spaces, which split on
		// neither "," nor ";": one keyword there, three in ODF.
		want := []string{"crawlspace", "fixtures", "Übersicht"}
		if f.kind == DOCX || f.kind == XLSX || f.kind == PPTX {
			want = []string{"crawlspace fixtures Übersicht"}
		}
		if !slices.Equal(c.Keywords, want) {
			t.Errorf("%s: keywords %q, want %q", f.file, c.Keywords, want)
		}
	}
}

func TestOOXMLKeywordsSplitOnCommasAndSemicolons(t *testing.T) {
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"docProps/core.xml": func(s string) string {
			return strings.Replace(s, "crawlspace fixtures Übersicht", "crawl; index , search", 1)
		},
	})
	if c := read(t, DOCX, data, document.Limits{}); !slices.Equal(c.Keywords, []string{"crawl", "index", "search"}) {
		t.Errorf("keywords %q", c.Keywords)
	}
}

func TestDescriptionStandsInForAMissingSubject(t *testing.T) {
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"docProps/core.xml": func(s string) string {
			return strings.Replace(s, "<dc:subject>Crawler operations in the first quarter</dc:subject>", "", 1)
		},
	})
	if c := read(t, DOCX, data, document.Limits{}); c.Subject != "A fixture for the crawlspace office readers" {
		t.Errorf("subject %q", c.Subject)
	}
}

func TestPagesAreSavedPageCountsOrSlideCounts(t *testing.T) {
	want := map[string]int{
		"text.odt": 2, "slides.pptx": 3, "slides.odp": 3, "sheets.xlsx": 0, "sheets.ods": 0,
		"text.docx": 0, // LibreOffice saves no <Pages> in app.xml
	}
	for _, f := range fixtures {
		if c := read(t, f.kind, fixture(t, f.file), document.Limits{}); c.Pages != want[f.file] {
			t.Errorf("%s: pages %d, want %d", f.file, c.Pages, want[f.file])
		}
	}
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"docProps/app.xml": func(s string) string { return strings.Replace(s, "<Template>", "<Pages>7</Pages><Template>", 1) },
	})
	if c := read(t, DOCX, data, document.Limits{}); c.Pages != 7 {
		t.Errorf("docx with <Pages>7</Pages>: pages %d", c.Pages)
	}
}

func TestFirstHeadingResolvesLocalisedStyleIDsByName(t *testing.T) {
	for _, f := range []struct {
		file string
		kind Kind
	}{{"text.docx", DOCX}, {"text.odt", ODT}} {
		if c := read(t, f.kind, fixture(t, f.file), document.Limits{}); c.Heading != "Überblick über den Crawler" {
			t.Errorf("%s: heading %q", f.file, c.Heading)
		}
	}
	// A German Word names the style "heading 1" but gives it the id
	// "berschrift1".
	local := func(s string) string { return strings.ReplaceAll(s, `"Heading1"`, `"berschrift1"`) }
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{"word/styles.xml": local, "word/document.xml": local})
	if c := read(t, DOCX, data, document.Limits{}); c.Heading != "Überblick über den Crawler" {
		t.Errorf("localised style id: heading %q", c.Heading)
	}
	// Without the style, the first paragraph is no heading.
	plain := func(s string) string { return strings.ReplaceAll(s, `w:val="Heading1"`, `w:val="Normal"`) }
	data = rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{"word/document.xml": plain})
	if c := read(t, DOCX, data, document.Limits{}); c.Heading != "" {
		t.Errorf("no heading style: heading %q", c.Heading)
	}
}

func TestTableRowsAreBlocksOfCells(t *testing.T) {
	for _, f := range []struct {
		file string
		kind Kind
	}{{"text.docx", DOCX}, {"text.odt", ODT}} {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		for _, line := range []string{"Month Pages Errors", "Février 3900 23", "Details are on the project site and in the handbook. Tabbed words"} {
			if !slices.Contains(strings.Split(c.Body, "\n"), line) {
				t.Errorf("%s: no line %q in\n%s", f.file, line, c.Body)
			}
		}
	}
}

func lineIndex(t *testing.T, body string, lines ...string) []int {
	t.Helper()
	all := strings.Split(body, "\n")
	var idx []int
	for _, l := range lines {
		i := slices.Index(all, l)
		if i < 0 {
			t.Fatalf("no line %q in\n%s", l, body)
		}
		idx = append(idx, i)
	}
	return idx
}

func TestSheetsInWorkbookOrderEachUnderItsName(t *testing.T) {
	for _, f := range []struct {
		file string
		kind Kind
	}{{"sheets.xlsx", XLSX}, {"sheets.ods", ODS}} {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		idx := lineIndex(t, c.Body, "Sites", "intranet 1250 Jürgen Müller", "Errors", "not found 42", "Zusammenfassung", "Kommentar Alles in Ordnung, café geöffnet")
		if !slices.IsSorted(idx) {
			t.Errorf("%s: lines at %v, not in workbook order\n%s", f.file, idx, c.Body)
		}
	}
	// The workbook's order, not the part names, decides.
	data := rewrite(t, fixture(t, "sheets.xlsx"), zip.Deflate, map[string]func(string) string{
		"xl/workbook.xml": func(s string) string {
			first := `<sheet name="Sites" sheetId="1" state="visible" r:id="rId2"/>`
			return strings.Replace(strings.Replace(s, first, "", 1), "</sheets>", first+"</sheets>", 1)
		},
	})
	c := read(t, XLSX, data, document.Limits{})
	if idx := lineIndex(t, c.Body, "Errors", "Zusammenfassung", "Sites", "intranet 1250 Jürgen Müller"); !slices.IsSorted(idx) {
		t.Errorf("reordered workbook: lines at %v\n%s", idx, c.Body)
	}
}

func TestSlidesInPresentationOrderEachFollowedByItsNotes(t *testing.T) {
	order := []string{
		"Roadmap für das Jahr", "Documents become searchable like pages", "Speaker notes for the first slide: greet everyone",
		"Formate und Grenzen", "Notes two mention zip bombs and encrypted files",
		"Zeitplan", "Ship before the summer with résumé support", "Final notes thank the audience",
	}
	for _, f := range []struct {
		file string
		kind Kind
	}{{"slides.pptx", PPTX}, {"slides.odp", ODP}} {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		if idx := lineIndex(t, c.Body, order...); !slices.IsSorted(idx) {
			t.Errorf("%s: lines at %v\n%s", f.file, idx, c.Body)
		}
	}
	// Reverse sldIdLst: slide3.xml comes first although its name sorts last.
	data := rewrite(t, fixture(t, "slides.pptx"), zip.Deflate, map[string]func(string) string{
		"ppt/presentation.xml": func(s string) string {
			i, j := strings.Index(s, "<p:sldIdLst>"), strings.Index(s, "</p:sldIdLst>")
			if i < 0 || j < 0 {
				t.Fatalf("no sldIdLst in %s", s)
			}
			ids := strings.SplitAfter(s[i+len("<p:sldIdLst>"):j], "/>")
			ids = ids[:len(ids)-1]
			slices.Reverse(ids)
			return s[:i+len("<p:sldIdLst>")] + strings.Join(ids, "") + s[j:]
		},
	})
	c := read(t, PPTX, data, document.Limits{})
	if idx := lineIndex(t, c.Body, "Zeitplan", "Final notes thank the audience", "Formate und Grenzen", "Roadmap für das Jahr", "Speaker notes for the first slide: greet everyone"); !slices.IsSorted(idx) {
		t.Errorf("reversed sldIdLst: lines at %v\n%s", idx, c.Body)
	}
}

func TestExternalLinksInDocumentOrderWithoutRepeats(t *testing.T) {
	want := map[Kind][]string{
		DOCX: {"https://example.org/report/details", "https://example.org/second"},
		ODT:  {"https://example.org/report/details", "https://example.org/second"},
		XLSX: {"https://example.org/handbook"},
		ODS:  {"https://example.org/handbook"},
		PPTX: {"https://example.org/formats"},
		ODP:  {"https://example.org/formats"},
	}
	for _, f := range fixtures {
		if c := read(t, f.kind, fixture(t, f.file), document.Limits{}); !slices.Equal(c.Links, want[f.kind]) {
			t.Errorf("%s: links %q, want %q", f.file, c.Links, want[f.kind])
		}
	}
}

func TestDetectTellsTheKindFromTheBytes(t *testing.T) {
	for _, f := range fixtures {
		if k, ok := Detect(fixture(t, f.file)); !ok || k != f.kind {
			t.Errorf("%s: Detect = %q, %v", f.file, k, ok)
		}
	}
	for _, b := range [][]byte{nil, []byte("%PDF-1.7"), []byte("PK\x03\x04garbage"), cfbMagic} {
		if k, ok := Detect(b); ok {
			t.Errorf("Detect(%q) = %q", b, k)
		}
	}
	// A plain zip is no office file.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("readme.txt")
	w.Write([]byte("hello"))
	zw.Close()
	if k, ok := Detect(buf.Bytes()); ok {
		t.Errorf("plain zip: Detect = %q", k)
	}
}

func TestReaderFollowsTheBytesNotTheKindAskedFor(t *testing.T) {
	c := read(t, DOCX, fixture(t, "text.odt"), document.Limits{})
	if c.Pages != 2 || c.Heading != "Überblick über den Crawler" {
		t.Errorf("odt read by the docx reader: pages %d heading %q", c.Pages, c.Heading)
	}
}

func reasonOf(t *testing.T, err error, want string) {
	t.Helper()
	var de *document.Error
	if !errors.As(err, &de) || de.Reason != want {
		t.Errorf("error %v: reason %q, want %q", err, document.ReasonOf(err), want)
	}
}

func TestPasswordProtectedFilesAreEncrypted(t *testing.T) {
	for _, f := range []struct {
		file string
		kind Kind
	}{{"encrypted.odt", ODT}, {"encrypted.docx", DOCX}, {"encrypted.xlsx", XLSX}, {"encrypted.pptx", PPTX}} {
		reasonOf(t, readErr(t, f.kind, fixture(t, f.file), document.Limits{}), document.ReasonEncrypted)
	}
}

// cfb is a minimal compound file: a header and one directory sector
// holding the named entries, which is all the encryption check looks at.
func cfb(names ...string) []byte {
	b := make([]byte, 1024)
	copy(b, cfbMagic)
	b[0x1E] = 9 // 512-byte sectors
	for i, n := range names {
		e := b[512+128*i:]
		j := 0
		for _, r := range n {
			e[j], e[j+1] = byte(r), 0
			j += 2
		}
		l := 2*len(n) + 2
		e[0x40], e[0x41] = byte(l), byte(l>>8)
		e[0x42] = 2 // a stream
	}
	return b
}

func TestMinimalCompoundFileWithEncryptedPackageIsEncrypted(t *testing.T) {
	data := cfb("Root Entry", "EncryptionInfo", "EncryptedPackage", "\x06DataSpaces")
	for _, k := range []Kind{DOCX, XLSX, PPTX} {
		reasonOf(t, readErr(t, k, data, document.Limits{}), document.ReasonEncrypted)
	}
}

func TestLegacyBinaryOfficeIsCorruptWithErrLegacyFormat(t *testing.T) {
	err := readErr(t, DOCX, cfb("Root Entry", "WordDocument", "1Table", "\x05SummaryInformation"), document.Limits{})
	reasonOf(t, err, document.ReasonCorrupt)
	if !errors.Is(err, ErrLegacyFormat) {
		t.Errorf("error %v is not ErrLegacyFormat", err)
	}
}

func TestTruncatedFilesAreCorrupt(t *testing.T) {
	for _, f := range fixtures {
		data := fixture(t, f.file)
		for _, n := range []int{0, 10, len(data) / 2, len(data) - 30} {
			reasonOf(t, readErr(t, f.kind, data[:n], document.Limits{}), document.ReasonCorrupt)
		}
	}
}

func TestCorruptXMLIsCorruptWithTheParserMessage(t *testing.T) {
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"word/document.xml": func(s string) string { return s[:len(s)/2] + "</w:nope>" },
	})
	err := readErr(t, DOCX, data, document.Limits{})
	reasonOf(t, err, document.ReasonCorrupt)
	if !strings.Contains(err.Error(), "word/document.xml") {
		t.Errorf("error %q does not name the part", err)
	}
}

// bomb is a docx whose document.xml inflates to size bytes of paragraphs;
// claimed is the uncompressed size its headers state, 0 for the truth.
func bomb(t *testing.T, size int, claimed uint64) []byte {
	t.Helper()
	para := "<w:p><w:r><w:t>bomb bomb bomb bomb</w:t></w:r></w:p>"
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestCompression)
	var real uint64
	write := func(s string) {
		io.WriteString(fw, s)
		real += uint64(len(s))
	}
	write(`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for n := 0; n < size; n += len(para) {
		write(para)
	}
	write("</w:body></w:document>")
	fw.Close()
	if claimed == 0 {
		claimed = real
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, _ := zw.Create("[Content_Types].xml")
	io.WriteString(w, `<Types><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	rw, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate,
		CompressedSize64: uint64(raw.Len()), UncompressedSize64: claimed})
	if err != nil {
		t.Fatal(err)
	}
	rw.Write(raw.Bytes())
	zw.Close()
	return out.Bytes()
}

func TestZipBombStopsAtTheUnpackedBudget(t *testing.T) {
	lim := document.Limits{MaxUnpacked: 1 << 20, MaxText: 64 << 20}
	// The headers claim 4 GB (the zip reader checks nothing against
	// that), and 32 MB inflate: the budget stops it at 1 MB.
	data := bomb(t, 32<<20, 1<<32)
	if len(data) > 200<<10 {
		t.Fatalf("the bomb is %d bytes, not a bomb", len(data))
	}
	reasonOf(t, readErr(t, DOCX, data, lim), document.ReasonTooLarge)
	// Headers that understate the size fail as well, whichever check is
	// first: the zip reader's or the budget.
	err := readErr(t, DOCX, bomb(t, 32<<20, 100), lim)
	if r := document.ReasonOf(err); r != document.ReasonTooLarge && r != document.ReasonCorrupt {
		t.Errorf("understated bomb: %v", err)
	}
	// Within the budget the same file reads.
	c := read(t, DOCX, bomb(t, 64<<10, 0), lim)
	if !strings.HasPrefix(c.Body, "bomb bomb") {
		t.Errorf("small bomb body %q", c.Body[:min(len(c.Body), 40)])
	}
}

func TestTooManyEntriesRejectedBeforeReading(t *testing.T) {
	for _, f := range fixtures {
		reasonOf(t, readErr(t, f.kind, fixture(t, f.file), document.Limits{MaxEntries: 5}), document.ReasonTooLarge)
	}
}

func TestMaxTextTruncatesTheBody(t *testing.T) {
	for _, f := range fixtures {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{MaxText: 60})
		if !c.Truncated || len(c.Body) > 60 || c.Body == "" {
			t.Errorf("%s: truncated %v, %d bytes %q", f.file, c.Truncated, len(c.Body), c.Body)
		}
		if c.Title == "" {
			t.Errorf("%s: metadata lost with the truncated body", f.file)
		}
	}
}

// countdown is a context that ends after its Err has been asked n times:
// a cancellation in the middle of a read, without a clock.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestCancelledContextEndsTheReadWithTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, f := range fixtures {
		_, err := NewReader(f.kind).Read(ctx, fixture(t, f.file), document.Limits{})
		reasonOf(t, err, document.ReasonTimeout)
	}
	// Mid-read: a body of 200,000 paragraphs is checked on the way.
	data := bomb(t, 10<<20, 1<<32)
	_, err := NewReader(DOCX).Read(&countdown{Context: context.Background(), n: 3}, data, document.Limits{MaxText: 64 << 20})
	reasonOf(t, err, document.ReasonTimeout)
}

func odsWith(t *testing.T, table string) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "mimetype", Method: zip.Store})
	io.WriteString(w, ODS.MIMEType())
	w, _ = zw.Create("content.xml")
	fmt.Fprintf(w, `<office:document-content xmlns:office="%s" xmlns:table="%s" xmlns:text="%s"><office:body><office:spreadsheet>%s</office:spreadsheet></office:body></office:document-content>`, nsOffice, nsTable, nsText, table)
	zw.Close()
	return out.Bytes()
}

func TestODSRepeatedCellsAndRowsWithoutBlowingUp(t *testing.T) {
	data := odsWith(t, `<table:table table:name="S">`+
		`<table:table-row><table:table-cell table:number-columns-repeated="3"><text:p>x</text:p></table:table-cell><table:table-cell><text:p>y</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16380"/></table:table-row>`+
		`<table:table-row table:number-rows-repeated="2"><table:table-cell><text:p>r</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16383"/></table:table-row>`+
		`<table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="16384"/></table:table-row>`+
		`<table:table-row><table:table-cell><text:p>end</text:p></table:table-cell></table:table-row>`+
		`</table:table>`)
	c := read(t, ODS, data, document.Limits{})
	if c.Body != "S\nx x x y\nr\nr\nend" {
		t.Errorf("body %q", c.Body)
	}
	// A hostile repeat count on a cell with text stops at the body limit.
	data = odsWith(t, `<table:table table:name="S"><table:table-row table:number-rows-repeated="1048576"><table:table-cell table:number-columns-repeated="1000000000"><text:p>boom</text:p></table:table-cell></table:table-row></table:table>`)
	c = read(t, ODS, data, document.Limits{MaxText: 1 << 16})
	if !c.Truncated {
		t.Errorf("hostile repeat: not truncated, %d bytes", len(c.Body))
	}
}

func TestDeepXMLIsCorruptNotACrash(t *testing.T) {
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"word/document.xml": func(s string) string {
			return strings.Replace(s, "<w:body>", "<w:body>"+strings.Repeat("<w:x>", 100000), 1)
		},
	})
	reasonOf(t, readErr(t, DOCX, data, document.Limits{}), document.ReasonCorrupt)
}

func TestMissingMainPartIsCorrupt(t *testing.T) {
	for _, c := range []struct {
		file, part string
		kind       Kind
	}{{"text.docx", "word/document.xml", DOCX}, {"sheets.xlsx", "xl/workbook.xml", XLSX}, {"slides.pptx", "ppt/presentation.xml", PPTX}, {"text.odt", "content.xml", ODT}} {
		zr, _ := zip.NewReader(bytes.NewReader(fixture(t, c.file)), int64(len(fixture(t, c.file))))
		var out bytes.Buffer
		zw := zip.NewWriter(&out)
		for _, f := range zr.File {
			if f.Name == c.part {
				continue
			}
			w, _ := zw.Create(f.Name)
			rc, _ := f.Open()
			io.Copy(w, rc)
			rc.Close()
		}
		zw.Close()
		reasonOf(t, readErr(t, c.kind, out.Bytes(), document.Limits{}), document.ReasonCorrupt)
	}
}

func TestOneReaderServesConcurrentReads(t *testing.T) {
	r := NewReader(DOCX)
	want := read(t, DOCX, fixture(t, "text.docx"), document.Limits{}).Body
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			// Every kind through the one reader: it follows the bytes.
			for _, f := range fixtures {
				c, err := r.Read(context.Background(), fixture(t, f.file), document.Limits{})
				if err == nil && f.file == "text.docx" && c.Body != want {
					err = fmt.Errorf("body differs: %q", c.Body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestNewReaderOfAnUnknownKindIsNil(t *testing.T) {
	if NewReader("rtf") != nil {
		t.Error("a reader for rtf")
	}
}

func TestAlternateContentIsReadOnce(t *testing.T) {
	box := `<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent><w:p><w:r><w:t>boxed words</w:t></w:r></w:p></w:txbxContent></w:drawing></mc:Choice>` +
		`<mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>boxed words</w:t></w:r></w:p></w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>`
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"word/document.xml": func(s string) string { return strings.Replace(s, "<w:body>", "<w:body>"+box, 1) },
	})
	if c := read(t, DOCX, data, document.Limits{}); strings.Count(c.Body, "boxed words") != 1 {
		t.Errorf("text box read %d times:\n%s", strings.Count(c.Body, "boxed words"), c.Body)
	}
}

func TestNestedFallbacksAreBoundedByDepth(t *testing.T) {
	deep := strings.Repeat("<mc:Fallback>", 100000)
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"word/document.xml": func(s string) string { return strings.Replace(s, "<w:body>", "<w:body>"+deep, 1) },
	})
	reasonOf(t, readErr(t, DOCX, data, document.Limits{}), document.ReasonCorrupt)
}

func TestHyperlinkFieldsAreLinks(t *testing.T) {
	fields := `<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> HYPERLINK "https://example.org/` +
		`field" \o "tip" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>field link</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>` +
		`<w:p><w:fldSimple w:instr=" HYPERLINK &quot;https://example.org/simple&quot; "><w:r><w:t>simple link</w:t></w:r></w:fldSimple></w:p>` +
		`<w:p><w:fldSimple w:instr=" HYPERLINK \l &quot;_Toc1&quot; "><w:r><w:t>inside</w:t></w:r></w:fldSimple></w:p>`
	data := rewrite(t, fixture(t, "text.docx"), zip.Deflate, map[string]func(string) string{
		"word/document.xml": func(s string) string { return strings.Replace(s, "<w:body>", "<w:body>"+fields, 1) },
	})
	c := read(t, DOCX, data, document.Limits{})
	want := []string{"https://example.org/field", "https://example.org/simple", "https://example.org/report/details", "https://example.org/second"}
	if !slices.Equal(c.Links, want) {
		t.Errorf("links %q, want %q", c.Links, want)
	}
	if !strings.HasPrefix(c.Body, "field link\nsimple link\ninside\n") {
		t.Errorf("body %q", c.Body[:min(60, len(c.Body))])
	}
}

func TestSharedStringsPastTheirBudgetAreLeftOut(t *testing.T) {
	data := fixture(t, "sheets.xlsx")
	p, err := openPackage(context.Background(), data, document.Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.sharedStrings("xl/sharedStrings.xml", 1<<20)
	if err != nil || len(all) < 10 || all[len(all)-1] == "" {
		t.Fatalf("%q, %v", all, err)
	}
	// Room for the first three strings and what their entries cost.
	max := len(all[0]) + len(all[1]) + len(all[2]) + 3*stringCost
	some, err := p.sharedStrings("xl/sharedStrings.xml", max)
	if err != nil || !slices.Equal(some, all[:3]) {
		t.Errorf("capped at %d bytes: %q, %v; want %q", max, some, err, all[:3])
	}
	if v := cellValue("s", strconv.Itoa(len(all)-1), "", some); v != "" {
		t.Errorf("a cell whose string was left out reads %q", v)
	}
}

// Slides and sheets start parts of the body, a sheet under its name:
// passages are cut along them.
func TestSlidesAndSheetsArePartsOfTheBody(t *testing.T) {
	for _, f := range fixtures {
		c := read(t, f.kind, fixture(t, f.file), document.Limits{})
		switch f.kind {
		case PPTX, ODP:
			if len(c.Parts) != 3 {
				t.Errorf("%s: parts %+v, want one per slide", f.file, c.Parts)
			}
			for i, p := range c.Parts {
				if p.Page != i+1 || p.Level != 0 || p.Offset >= len(c.Body) || (i > 0 && p.Offset <= c.Parts[i-1].Offset) {
					t.Errorf("%s: part %d %+v", f.file, i, p)
				}
			}
		case XLSX, ODS:
			if len(c.Parts) < 2 {
				t.Fatalf("%s: parts %+v, want one per sheet", f.file, c.Parts)
			}
			for i, p := range c.Parts {
				if p.Level != 1 || p.Title == "" || !strings.HasPrefix(c.Body[p.Offset:], p.Title) {
					t.Errorf("%s: part %d %+v does not start at its sheet's name", f.file, i, p)
				}
			}
		default:
			if len(c.Parts) != 0 {
				t.Errorf("%s: parts %+v", f.file, c.Parts)
			}
		}
	}
}
