package tika

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/internal/tikatest"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recall is the share of the reference's distinct words that the body has.
func recall(body, reference string) float64 {
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			m[w] = true
		}
		return m
	}
	have, want := words(body), words(reference)
	if len(want) == 0 {
		return 0
	}
	n := 0
	for w := range want {
		if have[w] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func readReal(t *testing.T, name, contentType string) *document.Content {
	t.Helper()
	r := Reader{URL: tikatest.URL(t), ContentType: contentType}
	c, err := r.Read(context.Background(), fixture(t, name), document.Limits{})
	if err != nil {
		t.Fatalf("Read %s: %v", name, err)
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

func TestWordDocumentGivesItsPropertiesHeadingLinksAndText(t *testing.T) {
	c := readReal(t, "report.doc", "application/msword")
	if want := "Why the GPL protects your freedom"; c.Title != want {
		t.Errorf("Title = %q, want %q", c.Title, want)
	}
	if want := []string{"Ada Lovelace"}; !slices.Equal(c.Authors, want) {
		t.Errorf("Authors = %q, want %q", c.Authors, want)
	}
	if want := "Free software licensing"; c.Subject != want {
		t.Errorf("Subject = %q, want %q (not the keywords Tika also puts in dc:subject)", c.Subject, want)
	}
	if want := []string{"licence", "copyleft", "GPL"}; !slices.Equal(c.Keywords, want) {
		t.Errorf("Keywords = %q, want %q", c.Keywords, want)
	}
	if want := time.Date(2025, 6, 17, 14, 45, 0, 0, time.UTC); !c.Modified.Equal(want) {
		t.Errorf("Modified = %v, want %v", c.Modified, want)
	}
	if want := time.Date(2024, 3, 5, 9, 30, 0, 0, time.UTC); !c.Created.Equal(want) {
		t.Errorf("Created = %v, want %v", c.Created, want)
	}
	if c.Heading != "Preamble" {
		t.Errorf("Heading = %q, want the first heading %q", c.Heading, "Preamble")
	}
	if want := []string{"https://www.gnu.org/licenses/gpl-3.0.html", "https://www.fsf.org/"}; !slices.Equal(c.Links, want) {
		t.Errorf("Links = %q, want %q", c.Links, want)
	}
	if r := recall(c.Body, string(fixture(t, "report.txt"))); r < 0.98 {
		t.Errorf("word recall against LibreOffice's text export = %.3f, want >= 0.98", r)
	}
	for _, want := range []string{"Grüße aus Köln: naïve café, Ångström, “smart quotes” – €5 and ½ price.", "GPLv3 2007 Free Software Foundation"} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	if strings.HasPrefix(c.Body, c.Title) {
		t.Errorf("body starts with the title from Tika's <head>: %.80q", c.Body)
	}
}

func TestSpreadsheetGivesEverySheetRowByRow(t *testing.T) {
	c := readReal(t, "budget.xls", "application/vnd.ms-excel")
	if c.Title != "Quarterly budget of the documentation team" || !slices.Equal(c.Authors, []string{"Ada Lovelace"}) {
		t.Errorf("Title, Authors = %q, %q", c.Title, c.Authors)
	}
	if c.Pages != 0 {
		t.Errorf("Pages = %d: a spreadsheet's sheets are not pages", c.Pages)
	}
	if strings.Contains(c.Body, "&P") {
		t.Errorf("body holds the sheets' header and footer codes:\n%s", c.Body)
	}
	if r := recall(c.Body, string(fixture(t, "budget.txt"))); r < 1 {
		t.Errorf("word recall against the sheets' CSV = %.3f, want 1", r)
	}
	for _, row := range []string{"Conference travel to Zürich Q3 875", "Grace Hopper Reviewer"} {
		if !strings.Contains(c.Body, row) {
			t.Errorf("body lacks the row %q:\n%s", row, c.Body)
		}
	}
}

func TestPresentationGivesSlidesInOrderWithNotesAndCountsThem(t *testing.T) {
	c := readReal(t, "slides.ppt", "application/vnd.ms-powerpoint")
	if c.Title != "Crawling the intranet" || c.Subject != "Enterprise search" {
		t.Errorf("Title, Subject = %q, %q", c.Title, c.Subject)
	}
	if c.Pages != 3 {
		t.Errorf("Pages = %d, want the 3 slides", c.Pages)
	}
	if r := recall(c.Body, string(fixture(t, "slides.txt"))); r < 1 {
		t.Errorf("word recall against pdftotext of the slides = %.3f, want 1", r)
	}
	order := []string{"Policies, reports", "start with the survey", "What users search for", "help desk", "Next steps", "ask for questions"}
	last := -1
	for _, s := range order {
		i := strings.Index(c.Body, s)
		if i < last {
			t.Errorf("%q missing or out of order in the body:\n%s", s, c.Body)
		}
		last = i
	}
}

func TestPDFPageCountAndTextComeFromTika(t *testing.T) {
	c := readReal(t, "mime-spec.pdf", "application/pdf")
	if c.Pages != 17 {
		t.Errorf("Pages = %d, want 17 (xmpTPg:NPages)", c.Pages)
	}
	if want := time.Date(2022, 4, 29, 17, 19, 8, 0, time.UTC); !c.Created.Equal(want) {
		t.Errorf("Created = %v, want %v", c.Created, want)
	}
	if r := recall(c.Body, string(fixture(t, "mime-spec.txt"))); r < 0.97 {
		t.Errorf("word recall against pdftotext = %.3f, want >= 0.97", r)
	}
}

func TestEncryptedDocumentIsReasonEncrypted(t *testing.T) {
	r := Reader{URL: tikatest.URL(t), ContentType: "application/msword"}
	_, err := r.Read(context.Background(), fixture(t, "report-encrypted.doc"), document.Limits{})
	if reason := reasonOf(t, err); reason != document.ReasonEncrypted {
		t.Errorf("reason %q (%v), want %q", reason, err, document.ReasonEncrypted)
	}
}

func TestTruncatedDocumentIsCorruptWithTikasMessage(t *testing.T) {
	data := fixture(t, "report.doc")
	r := Reader{URL: tikatest.URL(t), ContentType: "application/msword"}
	_, err := r.Read(context.Background(), data[:len(data)/3], document.Limits{})
	if reason := reasonOf(t, err); reason != document.ReasonCorrupt {
		t.Fatalf("reason %q (%v), want %q", reason, err, document.ReasonCorrupt)
	}
	if !strings.Contains(err.Error(), "Exception") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q: want Tika's exception line, without the stack trace", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a corrupt file's error wraps ErrUnavailable: the crawler would retry it forever")
	}
}

func TestMaxTextBoundsTheBodyAndMarksItTruncated(t *testing.T) {
	r := Reader{URL: tikatest.URL(t), ContentType: "application/pdf"}
	c, err := r.Read(context.Background(), fixture(t, "mime-spec.pdf"), document.Limits{MaxText: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Body) > 2000 || len(c.Body) < 1000 {
		t.Errorf("Truncated=%v, %d bytes; want truncated, at most 2000 bytes and most of them", c.Truncated, len(c.Body))
	}
}

func TestStoppedServerIsUnavailableNotCorrupt(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	_, err = Reader{URL: closed}.Read(context.Background(), []byte("anything"), document.Limits{})
	if !errors.Is(err, ErrUnavailable) || reasonOf(t, err) != ReasonUnavailable {
		t.Errorf("Read against a closed port: %v; want ErrUnavailable with reason %q", err, ReasonUnavailable)
	}
}

func TestServerErrorsAreUnavailableAndParserRefusalsAreTheDocuments(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		reason string
	}{
		{http.StatusInternalServerError, "java.lang.OutOfMemoryError", ReasonUnavailable},
		{http.StatusServiceUnavailable, "", ReasonUnavailable},
		{http.StatusNotFound, "<html>not Tika</html>", ReasonUnavailable},
		{http.StatusOK, "<html>a proxy's login page</html>", ReasonUnavailable},
		{http.StatusUnprocessableEntity, "org.apache.tika.exception.TikaException: bad header\n\tat x", document.ReasonCorrupt},
		{http.StatusUnprocessableEntity, "org.apache.tika.exception.EncryptedDocumentException: encrypted\n\tat x", document.ReasonEncrypted},
		{http.StatusUnsupportedMediaType, "", document.ReasonCorrupt},
		{http.StatusOK, `[{"X-TIKA:EXCEPTION:container_exception":"org.apache.poi.hwpf.OldWordFileFormatException: too old\n\tat y"}]`, document.ReasonCorrupt},
	} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		_, err := Reader{URL: s.URL}.Read(context.Background(), []byte("x"), document.Limits{})
		s.Close()
		if got := reasonOf(t, err); got != tc.reason {
			t.Errorf("HTTP %d %.40q: reason %q (%v), want %q", tc.status, tc.body, got, err, tc.reason)
		}
		if unavailable := errors.Is(err, ErrUnavailable); unavailable != (tc.reason == ReasonUnavailable) {
			t.Errorf("HTTP %d: errors.Is(err, ErrUnavailable) = %v with reason %q", tc.status, unavailable, tc.reason)
		}
	}
}

func TestAnswerPastItsBoundIsTooLarge(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"X-TIKA:content":"`))
		chunk := []byte(strings.Repeat("a", 1<<16))
		for range 1 << 10 { // 64 MiB, past the bound for MaxText 1 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer s.Close()
	_, err := Reader{URL: s.URL}.Read(context.Background(), []byte("x"), document.Limits{MaxText: 1 << 20})
	if reason := reasonOf(t, err); reason != document.ReasonTooLarge {
		t.Errorf("reason %q (%v), want %q", reason, err, document.ReasonTooLarge)
	}
}

func TestEndedContextIsATimeoutEvenWhileTheServerWorks(t *testing.T) {
	release, working := make(chan struct{}), make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(working)
		<-release
	}))
	defer s.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	// Ended once the server has the request and works on it.
	go func() {
		<-working
		cancel()
	}()
	_, err := Reader{URL: s.URL}.Read(ctx, []byte("x"), document.Limits{})
	if reason := reasonOf(t, err); reason != document.ReasonTimeout {
		t.Errorf("reason %q (%v), want %q", reason, err, document.ReasonTimeout)
	}
}

func TestRequestCarriesTheContentTypeAndLimits(t *testing.T) {
	var got http.Header
	var path, method string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, path, method = r.Header.Clone(), r.URL.Path, r.Method
		w.Write([]byte(`[{"X-TIKA:content":"<html><body><p>ok</p></body></html>"}]`))
	}))
	defer s.Close()
	c, err := Reader{URL: s.URL + "/", ContentType: "application/vnd.ms-excel"}.Read(context.Background(), []byte("x"), document.Limits{MaxText: 5000, MaxEntries: 7})
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodPut || path != "/rmeta/xml" || got.Get("Content-Type") != "application/vnd.ms-excel" ||
		got.Get("writeLimit") != "5000" || got.Get("maxEmbeddedResources") != "7" {
		t.Errorf("request %s %s with %v", method, path, got)
	}
	if c.Body != "ok" {
		t.Errorf("Body = %q", c.Body)
	}
}

func TestXHTMLMapping(t *testing.T) {
	list := []metadata{
		{
			"X-TIKA:content":  jsonString(`<html><head><title>T</title><meta name="x" content="y"/></head><body><div class="slide"><h2>First &amp; only</h2><p>One <a href="rel/doc.pdf">link</a> and <a href="#_Toc1">a bookmark</a>.</p><table><tr><td><p>a</p></td><td><p>b</p></td></tr></table><div class="outside">&amp;C&amp;12Page &amp;P</div></div><div class="slide"><p>Two<br/>lines</p></div></body></html>`),
			"dc:creator":      raw(`["A. Author","B. Author","A. Author"]`),
			"dc:subject":      raw(`["k1; k2","The subject"]`),
			"meta:keyword":    raw(`"k1; k2"`),
			"dcterms:created": raw(`"1601-01-01T00:00:00Z"`),
		},
		{"X-TIKA:content": jsonString(`<html><body><p>Attached <a href="http://example.org/">x</a></p></body></html>`)},
	}
	c, err := contentOf(context.Background(), list, document.Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	want := "First & only\nOne link and a bookmark.\na b\nTwo\nlines\nAttached x"
	if c.Body != want {
		t.Errorf("Body = %q, want %q", c.Body, want)
	}
	if c.Heading != "First & only" || c.Pages != 2 || !c.Created.IsZero() || c.Subject != "The subject" {
		t.Errorf("Heading %q, Pages %d, Created %v, Subject %q", c.Heading, c.Pages, c.Created, c.Subject)
	}
	if !slices.Equal(c.Authors, []string{"A. Author", "B. Author"}) || !slices.Equal(c.Keywords, []string{"k1", "k2"}) {
		t.Errorf("Authors %q, Keywords %q", c.Authors, c.Keywords)
	}
	if !slices.Equal(c.Links, []string{"rel/doc.pdf", "http://example.org/"}) {
		t.Errorf("Links = %q", c.Links)
	}
}

func raw(s string) []byte { return []byte(s) }

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// FuzzContent feeds the answer's mapping any metadata list a server could send.
func FuzzContent(f *testing.F) {
	f.Add(`[{"X-TIKA:content":"<html><body><h1>x</h1><p>y <a href=\"u\">z</a></p></body></html>","dc:title":"t","meta:keyword":["a,b","c"]}]`)
	f.Add(`[{"X-TIKA:content":"<p><div class=page><td>unclosed &nbsp; &bogus; <a href=>"},{"X-TIKA:content":3}]`)
	f.Add(`[{"X-TIKA:EXCEPTION:container_exception":"e\n"}]`)
	f.Add(`[{"dcterms:modified":"2020-13-45T99:00:00Z","xmpTPg:NPages":"-4"}]`)
	f.Fuzz(func(t *testing.T, answer string) {
		var list []metadata
		if json.Unmarshal([]byte(answer), &list) != nil || len(list) == 0 {
			return // Read refuses it as ErrUnavailable before mapping
		}
		c, err := contentOf(context.Background(), list, document.Limits{MaxText: 1000}.WithDefaults())
		if err != nil {
			var de *document.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *document.Error", err)
			}
			return
		}
		if len(c.Body) > 1000 || strings.Contains(c.Body, "\n\n") || c.Pages < 0 || !utf8.ValidString(c.Body) {
			t.Fatalf("body over its limit, with an empty line or invalid UTF-8, or negative pages: %+v", c)
		}
	})
}

// BenchmarkRead measures a round trip to the server per fixture: upload, Tika's parse, the
// answer's mapping.
func BenchmarkRead(b *testing.B) {
	url := tikatest.URL(b)
	for _, f := range []struct{ name, contentType string }{
		{"report.doc", "application/msword"},
		{"budget.xls", "application/vnd.ms-excel"},
		{"slides.ppt", "application/vnd.ms-powerpoint"},
		{"mime-spec.pdf", "application/pdf"},
	} {
		b.Run(f.name, func(b *testing.B) {
			data := fixture(b, f.name)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := (Reader{URL: url, ContentType: f.contentType}).Read(context.Background(), data, document.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
