// Package office reads the zip+XML office formats: Word, Excel and
// PowerPoint files (docx, xlsx, pptx) and OpenDocument text, spreadsheets
// and presentations (odt, ods, odp). Every part is read as a stream of XML
// tokens, never as a tree, and every byte decompressed counts against
// Limits.MaxUnpacked, whatever the zip headers claim.
package office

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/internal/xmlguard"
)

// Kind is one of the formats this package reads.
type Kind string

// The kinds, named by their usual file extension.
const (
	DOCX Kind = "docx"
	XLSX Kind = "xlsx"
	PPTX Kind = "pptx"
	ODT  Kind = "odt"
	ODS  Kind = "ods"
	ODP  Kind = "odp"
)

// MIMEType is the media type a server should send for a file of the kind.
func (k Kind) MIMEType() string {
	switch k {
	case DOCX:
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case XLSX:
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case PPTX:
		return "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	case ODT:
		return "application/vnd.oasis.opendocument.text"
	case ODS:
		return "application/vnd.oasis.opendocument.spreadsheet"
	case ODP:
		return "application/vnd.oasis.opendocument.presentation"
	}
	return ""
}

// ErrLegacyFormat is the Err of a ReasonCorrupt error for an OLE compound
// file that is not an encrypted OOXML package: a binary doc, xls or ppt,
// which only a reader such as Apache Tika can read.
var ErrLegacyFormat = errors.New("an OLE compound file (legacy binary Office format such as doc, xls or ppt), not a zip package")

// Detect tells the kind of a file from its bytes: a zip whose mimetype
// entry (OpenDocument) or [Content_Types].xml (OOXML) names one of the
// kinds. Templates and macro-enabled variants count as their base kind.
// It reads at most a few KB of one entry.
func Detect(data []byte) (Kind, bool) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return "", false
	}
	for _, f := range zr.File {
		if f.Name == "mimetype" || f.Name == "[Content_Types].xml" {
			b, err := readSmall(f, 1<<20)
			if err != nil {
				return "", false
			}
			return kindOf(f.Name, b)
		}
	}
	return "", false
}

func kindOf(name string, b []byte) (Kind, bool) {
	if name == "mimetype" {
		return odfKind(strings.TrimSpace(string(b)))
	}
	return ooxmlKind(b)
}

func readSmall(f *zip.File, max int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, max))
}

func odfKind(mime string) (Kind, bool) {
	switch strings.TrimSuffix(mime, "-template") {
	case ODT.MIMEType():
		return ODT, true
	case ODS.MIMEType():
		return ODS, true
	case ODP.MIMEType():
		return ODP, true
	}
	return "", false
}

// ooxmlKind finds the content type of the main part: a substring test is
// enough, each main type being distinct from every other part's.
func ooxmlKind(types []byte) (Kind, bool) {
	s := string(types)
	for _, c := range []struct {
		k    Kind
		subs []string
	}{
		{DOCX, []string{"wordprocessingml.document.main+xml", "wordprocessingml.template.main+xml", "ms-word.document.macroEnabled.main+xml", "ms-word.template.macroEnabledTemplate.main+xml"}},
		{XLSX, []string{"spreadsheetml.sheet.main+xml", "spreadsheetml.template.main+xml", "ms-excel.sheet.macroEnabled.main+xml", "ms-excel.template.macroEnabled.main+xml"}},
		{PPTX, []string{"presentationml.presentation.main+xml", "presentationml.template.main+xml", "presentationml.slideshow.main+xml", "ms-powerpoint.presentation.macroEnabled.main+xml", "ms-powerpoint.slideshow.macroEnabled.main+xml", "ms-powerpoint.template.macroEnabled.main+xml"}},
	} {
		for _, sub := range c.subs {
			if strings.Contains(s, sub) {
				return c.k, true
			}
		}
	}
	return "", false
}

// NewReader is the reader of one kind; nil for a kind it does not know.
func NewReader(k Kind) document.Reader {
	switch k {
	case DOCX, XLSX, PPTX, ODT, ODS, ODP:
		return reader{k}
	}
	return nil
}

type reader struct{ kind Kind }

// Read reads data as the reader's kind. A password-protected OOXML file
// (an OLE compound file holding an encrypted package) and an ODF file
// whose content.xml is encrypted fail with ReasonEncrypted.
func (r reader) Read(ctx context.Context, data []byte, lim document.Limits) (c *document.Content, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, document.Errorf(document.ReasonCorrupt, "%s reader panicked: %v", r.kind, p)
		}
	}()
	lim = lim.WithDefaults()
	if err := ctx.Err(); err != nil {
		return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
	}
	if isCFB(data) {
		if cfbEncryptedPackage(data) {
			return nil, document.Errorf(document.ReasonEncrypted, "a password-protected Office file (OLE compound file with an EncryptedPackage stream)")
		}
		return nil, &document.Error{Reason: document.ReasonCorrupt, Err: ErrLegacyFormat}
	}
	p, err := openPackage(ctx, data, lim)
	if err != nil {
		return nil, err
	}
	kind := r.kind
	if k, ok := p.kind(); ok {
		kind = k // what the bytes say wins over what the caller thought
	}
	c = &document.Content{}
	text := document.NewText(lim.MaxText)
	switch kind {
	case DOCX:
		err = p.readDOCX(c, text)
	case XLSX:
		err = p.readXLSX(c, text)
	case PPTX:
		err = p.readPPTX(c, text)
	default:
		err = p.readODF(kind, c, text)
	}
	if err != nil {
		return nil, err
	}
	c.Body = text.String()
	c.Truncated = text.Truncated()
	return c, nil
}

// pkg is an opened zip package, what may still be decompressed from it
// and what the reader keeps of it beside the body.
type pkg struct {
	ctx    context.Context
	lim    document.Limits
	files  map[string]*zip.File
	lower  map[string]*zip.File // OOXML part names compare case-insensitively
	budget int64
	kept   int64
}

func openPackage(ctx context.Context, data []byte, lim document.Limits) (*pkg, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &document.Error{Reason: document.ReasonCorrupt, Err: err}
	}
	if len(zr.File) > lim.MaxEntries {
		return nil, document.Errorf(document.ReasonTooLarge, "the zip has %d entries, more than the %d allowed", len(zr.File), lim.MaxEntries)
	}
	p := &pkg{ctx: ctx, lim: lim, files: make(map[string]*zip.File, len(zr.File)),
		lower: make(map[string]*zip.File, len(zr.File)), budget: lim.MaxUnpacked}
	for _, f := range zr.File {
		p.files[f.Name] = f
		p.lower[strings.ToLower(f.Name)] = f
	}
	return p, nil
}

func (p *pkg) file(name string) *zip.File {
	name = strings.TrimPrefix(name, "/")
	if f := p.files[name]; f != nil {
		return f
	}
	return p.lower[strings.ToLower(name)]
}

// kind is what the package's mimetype or [Content_Types].xml says it is.
func (p *pkg) kind() (Kind, bool) {
	for _, name := range []string{"mimetype", "[Content_Types].xml"} {
		if p.files[name] == nil {
			continue
		}
		rc, err := p.open(name)
		if err != nil {
			return "", false
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		rc.Close()
		if err != nil {
			return "", false
		}
		return kindOf(name, b)
	}
	return "", false
}

var errMissing = errors.New("missing part")

// open is a part's decompressed bytes as a stream that fails with
// ReasonTooLarge once the package's budget is spent.
func (p *pkg) open(name string) (io.ReadCloser, error) {
	f := p.file(name)
	if f == nil {
		return nil, fmt.Errorf("%w %s", errMissing, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, &document.Error{Reason: document.ReasonCorrupt, Err: fmt.Errorf("%s: %w", name, err)}
	}
	return &budgetReader{p: p, rc: rc}, nil
}

type budgetReader struct {
	p  *pkg
	rc io.ReadCloser
}

func (b *budgetReader) Read(buf []byte) (int, error) {
	if b.p.budget <= 0 {
		// A part that ends exactly at the budget is not too large.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 && err == io.EOF {
			return 0, io.EOF
		}
		return 0, document.Errorf(document.ReasonTooLarge, "more than %d bytes decompressed from the zip", b.p.lim.MaxUnpacked)
	}
	if int64(len(buf)) > b.p.budget {
		buf = buf[:b.p.budget]
	}
	n, err := b.rc.Read(buf)
	b.p.budget -= int64(n)
	return n, err
}

func (b *budgetReader) Close() error { return b.rc.Close() }

// maxKept bounds what a reader keeps of one file beside its body: the
// relationships of the parts open at once, links, the lists of sheets and
// slides, heading style ids, keywords. A file that needs more is hostile:
// an office file keeps well under a megabyte, one with 100,000 hyperlinks
// some 14 MB. entryCost is what one kept entry costs beside its strings,
// in a map or a slice: 2 million empty relationships are 2 million
// entries.
const (
	maxKept   = 16 << 20
	entryCost = 64
)

// keep counts an entry of n bytes against maxKept; past it the read is
// too_large.
func (p *pkg) keep(what string, n int) error {
	p.kept += int64(n) + entryCost
	if p.kept > maxKept {
		return document.Errorf(document.ReasonTooLarge, "%s: more than %d bytes kept beside the text (relationships, links, sheet and slide lists)", what, maxKept)
	}
	return nil
}

// forget gives back what keep counted for an entry of n bytes that is no
// longer held.
func (p *pkg) forget(n int) { p.kept -= int64(n) + entryCost }

// Bounds on one part's XML: deeper nesting than any office file has, and
// a token count past which a part is hostile rather than large. The input
// one token may take is Limits.MaxToken.
const (
	maxDepth  = 512
	maxTokens = 50_000_000
)

// walker is a stream of one part's XML tokens that checks the context and
// the bounds as it goes.
type walker struct {
	p     *pkg
	name  string
	rc    io.ReadCloser
	guard *xmlguard.Reader
	d     *xml.Decoder
	depth int
	n     int
}

func (p *pkg) walk(name string) (*walker, error) {
	rc, err := p.open(name)
	if err != nil {
		return nil, err
	}
	long := document.Errorf(document.ReasonTooLarge, "%s: an XML token (a text run, or a tag with its attributes) longer than %d bytes (documents.max_xml_token_bytes)", name, p.lim.MaxToken)
	guard := xmlguard.New(rc, p.lim.MaxToken, long)
	d := xml.NewDecoder(guard)
	d.Strict = false
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		// Office writes UTF-8 (or UTF-16, which encoding/xml cannot read
		// either way); a declared label is not worth failing over.
		return in, nil
	}
	return &walker{p: p, name: name, rc: rc, guard: guard, d: d}, nil
}

func (w *walker) close() { w.rc.Close() }

// next is the next token, io.EOF at the end, or a *document.Error.
func (w *walker) next() (xml.Token, error) {
	for {
		t, err := w.raw()
		if err != nil {
			return nil, err
		}
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "Fallback" && e.Name.Space == nsMarkupCompat {
			// Word and PowerPoint write a text box twice, as DrawingML
			// in mc:Choice and as VML in mc:Fallback: read it once.
			if err := w.skip(); err != nil {
				return nil, err
			}
			continue
		}
		return t, nil
	}
}

const nsMarkupCompat = "http://schemas.openxmlformats.org/markup-compatibility/2006"

// skip reads past the end of the element just started.
func (w *walker) skip() error {
	for end := w.depth - 1; w.depth > end; {
		if _, err := w.raw(); err != nil {
			if err == io.EOF {
				return &document.Error{Reason: document.ReasonCorrupt, Err: fmt.Errorf("%s: %w", w.name, io.ErrUnexpectedEOF)}
			}
			return err
		}
	}
	return nil
}

// raw is the next token with the context and the bounds checked.
func (w *walker) raw() (xml.Token, error) {
	w.n++
	if w.n&1023 == 0 {
		if err := w.p.ctx.Err(); err != nil {
			return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
		}
	}
	if w.n > maxTokens {
		return nil, document.Errorf(document.ReasonTooLarge, "%s: more than %d XML tokens", w.name, maxTokens)
	}
	w.guard.Mark()
	t, err := w.d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		var de *document.Error
		if errors.As(err, &de) {
			return nil, de
		}
		return nil, &document.Error{Reason: document.ReasonCorrupt, Err: fmt.Errorf("%s: %w", w.name, err)}
	}
	switch t.(type) {
	case xml.StartElement:
		w.depth++
		if w.depth > maxDepth {
			return nil, document.Errorf(document.ReasonCorrupt, "%s: XML nested deeper than %d elements", w.name, maxDepth)
		}
	case xml.EndElement:
		w.depth--
	}
	return t, nil
}

// each calls fn for every token of a part; a missing part is no error
// when optional.
func (p *pkg) each(name string, optional bool, fn func(xml.Token) error) error {
	w, err := p.walk(name)
	if err != nil {
		if optional && errors.Is(err, errMissing) {
			return nil
		}
		if errors.Is(err, errMissing) {
			return &document.Error{Reason: document.ReasonCorrupt, Err: err}
		}
		return err
	}
	defer w.close()
	for {
		t, err := w.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
	}
}

// errStop ends a walk early without an error: the body is full.
var errStop = errors.New("stop")

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// relID is an r:id style attribute: the local name in the relationships
// namespace of transitional or strict OOXML.
func relID(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local && strings.Contains(a.Name.Space, "relationships") {
			return a.Value
		}
	}
	return ""
}

// linkSet keeps links in first-seen order without repeats, up to
// document.MaxLinks of them. A link the package cannot keep is its err,
// which the reader returns once the part is read.
type linkSet struct {
	p    *pkg
	seen map[string]bool
	list []string
	err  error
}

func (l *linkSet) add(s string) {
	s = strings.TrimSpace(s)
	if s == "" || l.seen[s] || len(l.list) >= document.MaxLinks || l.err != nil {
		return
	}
	// The string is shared by the map and the list: one string, two entries.
	if l.err = l.p.keep("links", len(s)+entryCost); l.err != nil {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[s] = true
	l.list = append(l.list, s)
}

// appendCapped writes to b what of t fits within max bytes, cut on a
// character boundary: a text run may be megabytes where a field needs a
// few.
func appendCapped(b *strings.Builder, t []byte, max int) {
	room := max - b.Len()
	if room <= 0 {
		return
	}
	if room < len(t) {
		for room > 0 && !utf8.RuneStart(t[room]) {
			room--
		}
		t = t[:room]
	}
	b.Write(t)
}

// partDir is the folder a part's relative references resolve against.
func partDir(name string) string { return path.Dir(strings.TrimPrefix(name, "/")) }

// DetectPrefix tells the kind of a file from its first bytes alone, as a
// fetcher sees them before the rest has come: the names of the entries
// whose local headers lie within prefix (word/, xl/ or ppt/ parts), or an
// OpenDocument's mimetype entry, which the standard puts first and
// uncompressed. It is a guess for typing a download; Detect is the answer
// for a whole file.
func DetectPrefix(prefix []byte) (Kind, bool) {
	const localHeader = 30
	sig := []byte("PK\x03\x04")
	for i := 0; ; {
		j := bytes.Index(prefix[i:], sig)
		if j < 0 || i+j+localHeader > len(prefix) {
			return "", false
		}
		h := prefix[i+j:]
		method := binary.LittleEndian.Uint16(h[8:])
		size := int(binary.LittleEndian.Uint32(h[18:]))
		nameLen := int(binary.LittleEndian.Uint16(h[26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[28:]))
		if localHeader+nameLen > len(h) {
			return "", false
		}
		name := string(h[localHeader : localHeader+nameLen])
		switch {
		case name == "mimetype" && method == zip.Store:
			if start := localHeader + nameLen + extraLen; start+size <= len(h) {
				return odfKind(strings.TrimSpace(string(h[start : start+size])))
			}
			return "", false
		case strings.HasPrefix(name, "word/"):
			return DOCX, true
		case strings.HasPrefix(name, "xl/"):
			return XLSX, true
		case strings.HasPrefix(name, "ppt/"):
			return PPTX, true
		}
		i += j + localHeader + nameLen
	}
}
