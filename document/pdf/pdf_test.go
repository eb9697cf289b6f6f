package pdf

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/internal/proctest"
	"github.com/crawlspace/crawlspace/internal/wordmatch"
)

// The fixtures and their pdftotext texts come from scripts/testdocs-pdf.

// reader is shared: compiling PDFium takes seconds of CPU, once, and the
// cache keeps it for the next run and for the fuzzer's workers.
var reader = NewReader(Config{CacheDir: testCache})

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, name string, lim document.Limits) *document.Content {
	t.Helper()
	c, err := reader.Read(context.Background(), read(t, name), lim)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	var de *document.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *document.Error", err, err)
	}
	return de.Reason
}

func TestReadBodyHasPdftotextsWordsInItsOrder(t *testing.T) {
	// Thresholds sit a little under what PDFium reaches on each file
	// (docs/documents.md): a drop means the text got worse.
	for _, tc := range []struct {
		file          string
		recall, order float64
	}{
		{"cnfsat.pdf", 0.98, 0.95},
		{"live-manual.de.pdf", 0.99, 0.95},
		{"asyrefcard.pdf", 0.97, 0.75},
		{"amc.ja.pdf", 0.98, 0.97},
		{"users-and-groups.pdf", 0.99, 0.98},
		{"xmp-only.pdf", 0.99, 0.98},
		{"encrypted-owner.pdf", 0.98, 0.95},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := mustRead(t, tc.file, document.Limits{})
			ref := wordmatch.Words(string(read(t, strings.TrimSuffix(tc.file, ".pdf")+".txt")))
			got := wordmatch.Words(c.Body)
			t.Logf("recall %.3f, order %.3f", wordmatch.Recall(ref, got), wordmatch.Order(ref, got))
			if r := wordmatch.Recall(ref, got); r < tc.recall {
				t.Errorf("word recall %.3f < %.2f", r, tc.recall)
			}
			if o := wordmatch.Order(ref, got); o < tc.order {
				t.Errorf("bigram order %.3f < %.2f", o, tc.order)
			}
			if strings.Contains(c.Body, "\n\n") || c.Truncated {
				t.Errorf("blank line in body, or truncated=%v", c.Truncated)
			}
		})
	}
}

func TestReadMetadataFromTheInfoDictionary(t *testing.T) {
	c := mustRead(t, "live-manual.de.pdf", document.Limits{})
	if c.Title != "SiSU: - Live Systems Handbuch" {
		t.Errorf("title %q", c.Title)
	}
	if !slices.Equal(c.Authors, []string{"Live Systems Projekt <debian-live@lists.debian.org>"}) {
		t.Errorf("authors %q", c.Authors)
	}
	if want := time.Date(2022, 6, 14, 13, 11, 9, 0, time.UTC); !c.Created.Equal(want) {
		t.Errorf("created %v, want %v", c.Created, want)
	}
	if c.Pages != 64 {
		t.Errorf("pages %d", c.Pages)
	}
	if c.Heading != "Über Live Systeme" {
		t.Errorf("heading (first bookmark) %q", c.Heading)
	}

	// Four authors separated by commas, in Japanese metadata.
	c = mustRead(t, "amc.ja.pdf", document.Limits{})
	if c.Title != "Auto Multiple Choice" || len(c.Authors) != 4 || c.Authors[0] != "Bienvenue Alexis [FAMILY Given]" {
		t.Errorf("title %q, authors %q", c.Title, c.Authors)
	}
	if want := time.Date(2023, 2, 6, 0, 0, 0, 0, time.UTC); !c.Modified.Equal(want) {
		t.Errorf("modified %v, want %v", c.Modified, want)
	}

	// A date with a time zone, and no ModDate.
	c = mustRead(t, "cnfsat.pdf", document.Limits{})
	if want := time.Date(2013, 4, 16, 11, 10, 9, 0, time.UTC); !c.Created.Equal(want) || !c.Modified.IsZero() {
		t.Errorf("created %v (want %v), modified %v", c.Created, want, c.Modified)
	}

	// LibreOffice states the language in the catalog.
	c = mustRead(t, "users-and-groups.pdf", document.Limits{})
	if c.Title != "Users and Groups in the Debian System" || c.Language != "en-US" || c.Pages != 8 {
		t.Errorf("title %q, language %q, pages %d", c.Title, c.Language, c.Pages)
	}
}

func TestReadMetadataFromXMPWhereInfoHasNone(t *testing.T) {
	c := mustRead(t, "xmp-only.pdf", document.Limits{})
	if c.Title != "Users and Groups in the Debian System" {
		t.Errorf("title %q", c.Title)
	}
	if c.Created.IsZero() {
		t.Error("no creation date")
	}
}

func TestParseXMPPacket(t *testing.T) {
	// An image's packet first, then the document's, in attribute form.
	data := []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title><rdf:Alt><rdf:li>photo.jpg</rdf:li></rdf:Alt></dc:title></rdf:Description>
</rdf:RDF></x:xmpmeta> ... stream ...
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description xmlns:pdf="http://ns.adobe.com/pdf/1.3/" xmlns:xmp="http://ns.adobe.com/xap/1.0/"
 pdf:Producer="Word" pdf:Keywords="policy; travel, expenses" xmp:ModifyDate="2024-03-01T10:20:30+01:00"/>
<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/">
 <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Travel policy</rdf:li></rdf:Alt></dc:title>
 <dc:creator><rdf:Seq><rdf:li>Ann Smith</rdf:li><rdf:li>Bob Jones</rdf:li></rdf:Seq></dc:creator>
 <dc:description><rdf:Alt><rdf:li>How to travel</rdf:li></rdf:Alt></dc:description>
 <dc:language><rdf:Bag><rdf:li>en-GB</rdf:li></rdf:Bag></dc:language>
</rdf:Description></rdf:RDF></x:xmpmeta>`)
	var c document.Content
	fillFromXMP(data, &c)
	want := document.Content{
		Title: "Travel policy", Authors: []string{"Ann Smith", "Bob Jones"}, Subject: "How to travel",
		Keywords: []string{"policy", "travel", "expenses"}, Language: "en-GB",
		Modified: time.Date(2024, 3, 1, 9, 20, 30, 0, time.UTC),
	}
	if c.Title != want.Title || !slices.Equal(c.Authors, want.Authors) || c.Subject != want.Subject ||
		!slices.Equal(c.Keywords, want.Keywords) || c.Language != want.Language || !c.Modified.Equal(want.Modified) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	// Info wins where it has a value.
	c = document.Content{Title: "From Info"}
	fillFromXMP(data, &c)
	if c.Title != "From Info" {
		t.Errorf("title %q", c.Title)
	}
}

func TestReadLinksAreURIAnnotationsInPageOrderWithoutRepeats(t *testing.T) {
	for _, f := range []string{"live-manual.de", "users-and-groups", "amc.ja", "cnfsat"} {
		c := mustRead(t, f+".pdf", document.Limits{})
		want := strings.Fields(string(read(t, f+".links")))
		if !slices.Equal(c.Links, want) {
			t.Errorf("%s: links\n%q\nwant (qpdf)\n%q", f, c.Links, want)
		}
	}
}

func TestReadDecomposesLigatures(t *testing.T) {
	c := mustRead(t, "cnfsat.pdf", document.Limits{})
	if strings.ContainsAny(c.Body, "ﬀﬁﬂﬃﬄﬅﬆ") {
		t.Error("a ligature character is left in the body")
	}
	// pdftotext leaves them in this file: "ﬁnd" must be found as "find".
	ref := string(read(t, "cnfsat.txt"))
	n := 0
	for _, w := range strings.Fields(ref) {
		if strings.ContainsAny(w, "ﬀﬁﬂﬃﬄ") {
			n++
			plain := strings.Trim(ligatures.Replace(w), ".,;:()")
			if !strings.Contains(c.Body, plain) {
				t.Errorf("%q (%q in pdftotext) not in the body", plain, w)
			}
		}
	}
	if n == 0 {
		t.Fatal("the reference has no ligature: the test tests nothing")
	}
}

func TestReadRejoinsWordsHyphenatedAtLineEnds(t *testing.T) {
	// LaTeX hyphenates; pdftotext rejoins the halves, and so must we.
	c := mustRead(t, "cnfsat.pdf", document.Limits{})
	if strings.ContainsAny(c.Body, "\ufffe\u0002\u00ad") {
		t.Error("PDFium's hyphen mark is left in the body")
	}
	for _, w := range []string{"satisfiability", "conjunctive"} {
		if !strings.Contains(strings.ToLower(c.Body), w) {
			t.Errorf("%q missing", w)
		}
	}
}

func TestReadJapaneseLinesJoinWithoutSpaces(t *testing.T) {
	c := mustRead(t, "amc.ja.pdf", document.Limits{})
	if !strings.Contains(c.Body, "自動採点と評定の可能な選択式試験問題のデザイン") {
		t.Errorf("Japanese title line missing from %q", c.Body[:min(300, len(c.Body))])
	}
}

func TestReadEncryptedWithUserPasswordIsEncrypted(t *testing.T) {
	_, err := reader.Read(context.Background(), read(t, "encrypted-user.pdf"), document.Limits{})
	if r := reasonOf(t, err); r != document.ReasonEncrypted {
		t.Errorf("reason %q (%v)", r, err)
	}
}

func TestReadOwnerPasswordOnlyIsRead(t *testing.T) {
	c := mustRead(t, "encrypted-owner.pdf", document.Limits{})
	if c.Pages != 6 || !strings.Contains(c.Body, "CNF Satisfiability Problem") {
		t.Errorf("pages %d, body %q", c.Pages, c.Body[:min(100, len(c.Body))])
	}
}

func TestReadScannedPDFHasMetadataAndNoBody(t *testing.T) {
	c := mustRead(t, "scanned.pdf", document.Limits{})
	if c.Body != "" || c.Pages != 1 || c.Created.IsZero() {
		t.Errorf("body %q, pages %d, created %v", c.Body, c.Pages, c.Created)
	}
}

func TestReadTruncatedOrNotPDFIsCorrupt(t *testing.T) {
	data := read(t, "cnfsat.pdf")
	for name, b := range map[string][]byte{
		"half":   data[:len(data)/2],
		"header": data[:100],
		"html":   []byte("<!doctype html><title>not a PDF</title>"),
		"empty":  nil,
	} {
		_, err := reader.Read(context.Background(), b, document.Limits{})
		if r := reasonOf(t, err); r != document.ReasonCorrupt {
			t.Errorf("%s: reason %q (%v)", name, r, err)
		}
	}
}

func TestReadStopsAtMaxText(t *testing.T) {
	c := mustRead(t, "cnfsat.pdf", document.Limits{MaxText: 1000})
	if !c.Truncated || len(c.Body) > 1000 || len(c.Body) < 900 {
		t.Errorf("truncated %v, %d bytes", c.Truncated, len(c.Body))
	}
	if c.Pages != 6 {
		t.Errorf("pages %d: metadata must not depend on the text limit", c.Pages)
	}
}

// pdfOf is a PDF file of objs, numbered from 1; 1 is the catalog.
func pdfOf(objs []string) []byte {
	var b bytes.Buffer
	offs := make([]int, len(objs))
	b.WriteString("%PDF-1.4\n")
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, x)
	return b.Bytes()
}

const helvetica = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"

func page(contents int) string {
	return fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", contents)
}

// bigPDF is a PDF of n pages of 50 lines of text each, for the tests
// that need a long extraction; it is made, not committed.
func bigPDF(n int) []byte {
	kids := make([]string, n)
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Count %d /Kids [%s] >>", n, strings.Join(kids, " ")),
		helvetica,
	}
	for i := range n {
		var s strings.Builder
		s.WriteString("BT /F1 10 Tf 50 800 Td 12 TL\n")
		for l := range 50 {
			fmt.Fprintf(&s, "(Page %d line %d: the quick brown fox jumps over the lazy dog) '\n", i+1, l+1)
		}
		s.WriteString("ET")
		objs = append(objs, page(5+2*i), fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", s.Len(), s.String()))
	}
	return pdfOf(objs)
}

// bombPDF is a PDF of one page whose content stream, 200 KB compressed,
// is 64 MB of text: a decompression bomb.
func bombPDF() []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write([]byte("BT /F1 10 Tf 50 800 Td\n"))
	line := []byte("(the quick brown fox jumps over the lazy dog) Tj\n")
	for n := 0; n < 64<<20; n += len(line) {
		w.Write(line)
	}
	w.Write([]byte("ET"))
	w.Close()
	return pdfOf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Count 1 /Kids [4 0 R] >>",
		helvetica,
		page(5),
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	})
}

var big = sync.OnceValue(func() []byte { return bigPDF(3000) })

func TestReadReturnsTimeoutPromptlyWhenCtxEndsMidExtraction(t *testing.T) {
	data := big()
	// The whole file takes seconds; ctx ends 300 ms in.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	mustRead(t, "cnfsat.pdf", document.Limits{}) // PDFium compiled before the clock runs
	start := time.Now()
	c, err := reader.Read(ctx, data, document.Limits{})
	took := time.Since(start)
	if err == nil {
		t.Fatalf("read %d pages before ctx ended; make the PDF bigger", c.Pages)
	}
	if r := reasonOf(t, err); r != document.ReasonTimeout {
		t.Errorf("reason %q (%v)", r, err)
	}
	deadline, _ := ctx.Deadline()
	t.Logf("returned %v after ctx ended", time.Since(deadline))
	if took > 300*time.Millisecond+time.Second {
		t.Errorf("returned %v after ctx ended", took-300*time.Millisecond)
	}
	// The reader still works after an instance was killed.
	mustRead(t, "cnfsat.pdf", document.Limits{})
}

func TestReadPastMemoryLimitIsTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: decompression bombs and 3,000 pages, half a minute")
	}
	bomb := bombPDF()
	for _, mem := range []int64{32 << 20, document.DefaultMaxMemory} {
		_, err := reader.Read(context.Background(), bomb, document.Limits{MaxMemory: mem})
		if r := reasonOf(t, err); r != document.ReasonTooLarge {
			t.Errorf("bomb in %d MB: reason %q (%v)", mem>>20, r, err)
		}
	}
	// A file half the limit or more is refused before PDFium starts.
	data := big()
	_, err := reader.Read(context.Background(), data, document.Limits{MaxMemory: int64(len(data)) * 2})
	if r := reasonOf(t, err); r != document.ReasonTooLarge {
		t.Errorf("limit twice the file: reason %q (%v)", r, err)
	}
	// A limit PDFium cannot start in.
	_, err = reader.Read(context.Background(), read(t, "cnfsat.pdf"), document.Limits{MaxMemory: 16 << 20})
	if r := reasonOf(t, err); r != document.ReasonTooLarge {
		t.Errorf("16 MB: reason %q (%v)", r, err)
	}
	// The default limit reads 3,000 pages, and the reader still works
	// after the bombs.
	c, err := reader.Read(context.Background(), data, document.Limits{MaxText: 16 << 20})
	if err != nil || c.Pages != 3000 || !strings.Contains(c.Body, "Page 3000 line 50: the quick brown fox") {
		t.Errorf("3,000 pages in the default limit: %v", err)
	}
}

func TestReadConcurrentlyWithFewerInstancesThanReads(t *testing.T) {
	// The shared cache: without it each of the two workers compiles PDFium again, which under the
	// race detector took most of the package's time.
	r := NewReader(Config{Instances: 2, CacheDir: testCache})
	defer r.Close()
	files := []string{"cnfsat.pdf", "users-and-groups.pdf", "amc.ja.pdf", "live-manual.de.pdf"}
	want := map[string]string{}
	for _, f := range files {
		want[f] = mustRead(t, f, document.Limits{}).Body
	}
	var wg sync.WaitGroup
	for i := range 12 {
		f := files[i%len(files)]
		data := read(t, f)
		wg.Go(func() {
			c, err := r.Read(context.Background(), data, document.Limits{})
			if err != nil || c.Body != want[f] {
				t.Errorf("%s: %v, or the body differs from a lone read", f, err)
			}
		})
	}
	wg.Wait()
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]time.Time{
		"D:20221110093000+01'00'": time.Date(2022, 11, 10, 8, 30, 0, 0, time.UTC),
		"D:20221110093000-0530":   time.Date(2022, 11, 10, 15, 0, 0, 0, time.UTC),
		"D:20221110093000Z":       time.Date(2022, 11, 10, 9, 30, 0, 0, time.UTC),
		"D:2022":                  time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC),
		"20221110":                time.Date(2022, 11, 10, 0, 0, 0, 0, time.UTC),
		"D:20221310":              {},
		"D:20220230":              {},
		"yesterday":               {},
		"":                        {},
	} {
		if got := parseDate(in); !got.Equal(want) {
			t.Errorf("parseDate(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestSplitAuthors(t *testing.T) {
	for in, want := range map[string][]string{
		"Ann Smith; Bob Jones":        {"Ann Smith", "Bob Jones"},
		"Smith, Ann":                  {"Smith, Ann"},
		"Ann Smith, Bob Jones, C. Li": {"Ann Smith", "Bob Jones", "C. Li"},
		"gnuplot":                     {"gnuplot"},
		" ; ":                         nil,
	} {
		if got := authors(in); !slices.Equal(got, want) {
			t.Errorf("authors(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, n := range []string{"cnfsat.pdf", "users-and-groups.pdf", "scanned.pdf", "encrypted-user.pdf", "asyrefcard.pdf", "xmp-only.pdf"} {
		f.Add(read(f, n))
	}
	f.Add(bigPDF(2))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := reader.Read(ctx, data, document.Limits{MaxText: 4096, MaxMemory: 64 << 20})
		if err != nil {
			var de *document.Error
			if !errors.As(err, &de) {
				t.Fatalf("not a *document.Error: %v", err)
			}
			return
		}
		if len(c.Body) > 4096 || strings.Contains(c.Body, "\n\n") {
			t.Fatalf("body of %d bytes, or with a blank line", len(c.Body))
		}
	})
}

// BenchmarkRead is one small PDF (6 pages, 60 KB) per op: a fresh PDFium
// instance and the extraction.
func BenchmarkRead(b *testing.B) {
	data := read(b, "cnfsat.pdf")
	if _, err := reader.Read(context.Background(), data, document.Limits{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := reader.Read(context.Background(), data, document.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNewReaderCompilesNothingBeforeTheFirstPDF(t *testing.T) {
	r := NewReader(Config{})
	defer r.Close()
	if r.started != 0 {
		t.Error("NewReader started a worker")
	}
	// Refused before PDFium is needed.
	r.Read(context.Background(), make([]byte, 300<<20), document.Limits{})
	if r.started != 0 {
		t.Error("a file refused for its size started a worker")
	}
}

func TestReadsCancelledWhileOthersRunLeaveTheReaderWorking(t *testing.T) {
	r := NewReader(Config{Instances: 2, CacheDir: testCache})
	defer r.Close()
	data, small := big(), read(t, "cnfsat.pdf")
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+100*i)*time.Millisecond)
			defer cancel()
			if _, err := r.Read(ctx, data, document.Limits{}); document.ReasonOf(err) != document.ReasonTimeout {
				t.Errorf("read %d: %v", i, err)
			}
		})
		wg.Go(func() {
			if _, err := r.Read(context.Background(), small, document.Limits{}); err != nil {
				t.Errorf("small read beside %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if c, err := r.Read(context.Background(), small, document.Limits{}); err != nil || c.Pages != 6 {
		t.Errorf("after: %v", err)
	}
}

// workers are the live worker processes of r.
func workers(r *Reader) []*worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ws []*worker
	for w := range r.all {
		ws = append(ws, w)
	}
	return ws
}

// gone says pid is no process, not even a zombie: it was reaped.
func gone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

func TestCloseKillsAndReapsEveryWorker(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	r := NewReader(Config{Instances: 2, CacheDir: testCache})
	small := read(t, "cnfsat.pdf")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := r.Read(context.Background(), small, document.Limits{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var pids []int
	for _, w := range workers(r) {
		pids = append(pids, w.cmd.Process.Pid)
	}
	if len(pids) == 0 {
		t.Fatal("no worker started")
	}
	r.Close()
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("worker %d still there after Close", pid)
		}
	}
	if _, err := r.Read(context.Background(), small, document.Limits{}); document.ReasonOf(err) != document.ReasonFailed {
		t.Errorf("read after Close: %v", err)
	}
}

func TestWorkerExitsWhenItsInputCloses(t *testing.T) {
	r := NewReader(Config{Instances: 1})
	defer r.Close()
	w, err := r.get()
	if err != nil {
		t.Fatal(err)
	}
	w.stdin.Close()
	select {
	case <-w.waited:
		if !w.cmd.ProcessState.Success() {
			t.Errorf("worker exited with %v", w.cmd.ProcessState)
		}
	case <-time.After(30 * time.Second):
		t.Error("worker still running 30 s after its stdin closed")
	}
}

func TestWorkerDyingMidReadIsCorruptAndReplaced(t *testing.T) {
	r := NewReader(Config{Instances: 1, CacheDir: testCache})
	defer r.Close()
	small := read(t, "cnfsat.pdf")
	if _, err := r.Read(context.Background(), small, document.Limits{}); err != nil {
		t.Fatal(err)
	}
	w := workers(r)[0]
	// Killed from outside while it reads, as the kernel's OOM killer would:
	// once the request is written and the answer awaited.
	reading := make(chan struct{})
	w.out = bufio.NewReader(&firstRead{r: w.out, first: reading})
	go func() {
		<-reading
		w.cmd.Process.Kill()
	}()
	_, err := r.Read(context.Background(), big(), document.Limits{})
	if reasonOf(t, err) != document.ReasonCorrupt || !strings.Contains(err.Error(), "killed") {
		t.Errorf("worker killed mid-read: %v", err)
	}
	if c, err := r.Read(context.Background(), small, document.Limits{}); err != nil || c.Pages != 6 {
		t.Errorf("read after a worker died: %v", err)
	}
}

// parentEnv makes the test binary a parent that starts a worker, prints
// its pid and waits to be killed.
const parentEnv = "CRAWLSPACE_PDF_TEST_PARENT"

func TestWorkerDiesWithItsParent(t *testing.T) {
	if os.Getenv(parentEnv) != "" {
		r := NewReader(Config{Instances: 1})
		w, err := r.get()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(w.cmd.Process.Pid)
		select {} // until the test kills this parent
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerDiesWithItsParent$")
	cmd.Env = append(os.Environ(), parentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The worker is reparented, to init or a subreaper, which reaps it.
	if !proctest.Ended(t, pid) {
		t.Errorf("worker %d still running after its parent was killed", pid)
	}
}

// firstRead tells first once its first Read begins.
type firstRead struct {
	r     io.Reader
	first chan struct{}
	once  sync.Once
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	return f.r.Read(p)
}
