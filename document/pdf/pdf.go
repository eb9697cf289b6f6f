// Package pdf reads PDF files with PDFium compiled to WebAssembly
// (github.com/klippa-app/go-pdfium) and run in wazero: no cgo, and a parse
// that goes wrong stays in its sandbox. A document is read in a worker
// process (this executable started again, see Worker), in an instance
// whose memory is capped at Limits.MaxMemory and which sees no directory
// of the machine; when ctx ends the worker is killed. An instance is used
// again only after a clean read that left it small.
// docs/documents.md says why PDFium and not a pure-Go parser, and what
// the sandbox costs.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/crawlspace/crawlspace/document"
)

// Config sets up a Reader.
type Config struct {
	// CacheDir, if set, is a directory where wazero keeps PDFium's
	// compiled machine code, so that a worker after the first starts
	// reading PDFs in about 0.1 s of CPU instead of about 3.5 s. Empty
	// means a temporary directory, removed by Close.
	CacheDir string
	// Instances bounds the worker processes, each reading one PDF at a
	// time; more Reads wait. Zero means GOMAXPROCS.
	Instances int
}

// DefaultCacheDir is where a program keeps PDFium's compiled code for its
// later processes: crawlspace/pdfium in the user's cache directory, or
// empty (a temporary directory per Reader) where there is none.
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "crawlspace", "pdfium")
}

// sandbox runs PDFium in this process; a worker process reads with one.
type sandbox struct {
	cfg   Config
	slots chan struct{}

	mu    sync.Mutex
	cache wazero.CompilationCache
	pools map[uint32]*pool // by memory limit in pages
}

// pool is go-pdfium's pool of PDFium instances for one memory limit,
// compiled in the background; ready is closed when pool or err is set.
type pool struct {
	ready chan struct{}
	p     pdfium.Pool
	err   error
}

func newSandbox(cfg Config) *sandbox {
	if cfg.Instances <= 0 {
		cfg.Instances = runtime.GOMAXPROCS(0)
	}
	return &sandbox{cfg: cfg, slots: make(chan struct{}, cfg.Instances), pools: map[uint32]*pool{}}
}

// Close releases the compiled module and any sandbox still open.
func (r *sandbox) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, p := range r.pools {
		<-p.ready
		if p.p != nil {
			errs = append(errs, p.p.Close())
		}
		delete(r.pools, k)
	}
	if r.cache != nil {
		errs = append(errs, r.cache.Close(context.Background()))
		r.cache = nil
	}
	return errors.Join(errs...)
}

const (
	pageSize = 64 << 10 // a WebAssembly memory page
	// minMemory is a little over the 18 MB (288 pages) pdfium.wasm
	// declares as its initial memory: below it no instance can start.
	minMemory = 20 << 20
	// reuseBelow is the memory size up to which an instance is reused.
	reuseBelow = 64 << 20
)

// precheck refuses what no sandbox can read, before one is started.
func precheck(data []byte, lim document.Limits) error {
	if lim.MaxMemory < minMemory {
		return document.Errorf(document.ReasonTooLarge, "a sandbox of %d bytes is too small for PDFium, which needs %d", lim.MaxMemory, minMemory)
	}
	// The file is copied into the sandbox, whose parse needs room too.
	if int64(len(data)) >= lim.MaxMemory/2 {
		return document.Errorf(document.ReasonTooLarge, "a PDF of %d bytes does not fit a sandbox of %d bytes", len(data), lim.MaxMemory)
	}
	return nil
}

// admit checks a file before any PDFium work and waits for one of slots:
// what a Read in the crawler's process and one in a worker both do first.
func admit(ctx context.Context, slots chan struct{}, data []byte, lim document.Limits) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, timeout(err)
	}
	if err := precheck(data, lim); err != nil {
		return nil, err
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, timeout(ctx.Err())
	}
}

// Read reads one PDF file in this process. Without wazero's
// WithCloseOnContextDone, which triples PDFium's CPU time, ctx is seen
// only between pages: the Reader stops a read by killing its worker.
func (r *sandbox) Read(ctx context.Context, data []byte, lim document.Limits) (c *document.Content, err error) {
	lim = lim.WithDefaults()
	release, err := admit(ctx, r.slots, data, lim)
	if err != nil {
		return nil, err
	}
	defer release()

	pages := uint32(min(lim.MaxMemory/pageSize, 65536))
	p, err := r.pool(ctx, pages)
	if err != nil {
		return nil, err
	}
	inst, err := p.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, timeout(ctx.Err())
		}
		return nil, &document.Error{Reason: document.ReasonFailed, Err: fmt.Errorf("pdfium instance: %w", err)}
	}

	// Runs last, once nothing runs on the instance's memory.
	defer pin(inst)()

	defer func() {
		// An instance goes back to the pool only after a clean read
		// that left it small: one that failed may be in any state, and
		// WebAssembly memory never shrinks, so a big one would keep its
		// memory while idle.
		if m := moduleOf(inst); err == nil && m != nil && m.Memory().Size() <= reuseBelow {
			inst.Close()
		} else {
			inst.Kill()
		}
	}()
	defer func() {
		if v := recover(); v != nil {
			c, err = nil, fmt.Errorf("pdfium: panic: %v", v)
		}
		if err != nil {
			err = classify(ctx, inst, pages, err)
		}
	}()
	return extract(ctx, inst, data, lim)
}

// classify turns an error from PDFium into the document.Error it means.
func classify(ctx context.Context, inst pdfium.Pdfium, pages uint32, err error) error {
	var de *document.Error
	switch {
	case ctx.Err() != nil:
		return timeout(ctx.Err())
	case errors.As(err, &de):
		return err
	case errors.Is(err, pdfiumerrors.ErrPassword), errors.Is(err, pdfiumerrors.ErrSecurity):
		return &document.Error{Reason: document.ReasonEncrypted, Err: fmt.Errorf("pdfium: %w", err)}
	case nearLimit(inst, pages):
		return &document.Error{Reason: document.ReasonTooLarge, Err: fmt.Errorf("pdfium reached its memory limit of %d MB: %w", pages/16, err)}
	}
	if !strings.HasPrefix(err.Error(), "pdfium: ") {
		err = fmt.Errorf("pdfium: %w", err)
	}
	return &document.Error{Reason: document.ReasonCorrupt, Err: err}
}

func timeout(err error) error { return &document.Error{Reason: document.ReasonTimeout, Err: err} }

// nearLimit says the instance has used half its memory limit or more: an
// allocation failed for want of room rather than for a broken file. Half,
// not all: PDFium fails an allocation it cannot have, and the one that
// failed may have been large (a decompressed content stream, the
// character table of a page of millions of characters).
func nearLimit(inst pdfium.Pdfium, pages uint32) bool {
	defer func() { recover() }() // the instance may be closing
	m := moduleOf(inst)
	return m != nil && 2*uint64(m.Memory().Size()) >= uint64(pages)*pageSize
}

// impl is go-pdfium's implementation behind inst, whose type is internal:
// its exported field Module is reached by reflection.
func impl(inst pdfium.Pdfium) (v reflect.Value, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	v = reflect.ValueOf(inst.GetImplementation())
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	return v.Elem(), true
}

// moduleOf is the sandbox behind inst, nil if it cannot be had.
func moduleOf(inst pdfium.Pdfium) api.Module {
	v, ok := impl(inst)
	if !ok {
		return nil
	}
	f := v.FieldByName("Module")
	if !f.IsValid() || !f.CanInterface() {
		return nil
	}
	m, _ := f.Interface().(api.Module)
	return m
}

// pool is the pool for a memory limit, compiling PDFium the first time;
// ctx bounds only the wait.
func (r *sandbox) pool(ctx context.Context, pages uint32) (pdfium.Pool, error) {
	r.mu.Lock()
	p, ok := r.pools[pages]
	if !ok {
		p = &pool{ready: make(chan struct{})}
		r.pools[pages] = p
		if r.cache == nil {
			r.cache = r.newCache()
		}
		go func(cache wazero.CompilationCache) {
			defer close(p.ready)
			p.p, p.err = webassembly.Init(webassembly.Config{
				// Instances are made with this context.
				Context: experimental.WithMemoryAllocator(context.Background(), memoryAllocator()),
				// None is started before a document needs it; r.slots
				// bounds those in use.
				MinIdle: 0, MaxIdle: r.cfg.Instances, MaxTotal: r.cfg.Instances,
				ReuseWorkers: true,
				// No mounts: PDFium sees no file of the machine (go-pdfium
				// mounts / when FSConfig is nil).
				FSConfig: wazero.NewFSConfig(),
				Stdout:   io.Discard,
				Stderr:   io.Discard,
				RuntimeConfig: wazero.NewRuntimeConfig().
					WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
					WithMemoryLimitPages(pages).
					WithCompilationCache(cache),
			})
			if p.err != nil {
				p.err = &document.Error{Reason: document.ReasonFailed, Err: fmt.Errorf("pdfium: %w", p.err)}
			}
		}(r.cache)
	}
	r.mu.Unlock()
	select {
	case <-p.ready:
		return p.p, p.err
	case <-ctx.Done():
		return nil, timeout(ctx.Err())
	}
}

// newCache is the compilation cache the pools of all memory limits share:
// in CacheDir if it is usable, else in memory.
func (r *sandbox) newCache() wazero.CompilationCache {
	if r.cfg.CacheDir != "" {
		if c, err := wazero.NewCompilationCacheWithDir(r.cfg.CacheDir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
}

// extract reads metadata, links and text. A page PDFium cannot load is
// skipped: a damaged file gives what it can.
func extract(ctx context.Context, inst pdfium.Pdfium, data []byte, lim document.Limits) (*document.Content, error) {
	doc, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		return nil, err
	}
	d := doc.Document
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: d})

	c := &document.Content{}
	meta(inst, d, c)
	fillFromXMP(data, c)
	if n, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: d}); err == nil {
		c.Pages = n.PageCount
	} else {
		return nil, err
	}
	if fc, err := inst.FPDFBookmark_GetFirstChild(&requests.FPDFBookmark_GetFirstChild{Document: d}); err == nil && fc.Bookmark != nil {
		if t, err := inst.FPDFBookmark_GetTitle(&requests.FPDFBookmark_GetTitle{Bookmark: *fc.Bookmark}); err == nil {
			c.Heading = clean(t.Title)
		}
	}

	body := document.NewText(lim.MaxText)
	seen := map[string]bool{}
	starts := make([]int, 0, c.Pages) // where each page's text starts in the body
	for i := 0; i < c.Pages; i++ {
		starts = append(starts, body.Len())
		if err := ctx.Err(); err != nil {
			return nil, timeout(err)
		}
		page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d, Index: i})
		if err != nil {
			// A page PDFium cannot parse is skipped; a trap (PDFium
			// aborted, often for want of memory) ends the sandbox's use.
			if ctx.Err() != nil || strings.Contains(err.Error(), "wasm error") {
				return nil, err
			}
			continue
		}
		if !body.Full() {
			text, err := pageText(inst, page.Page)
			if err != nil {
				inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
				return nil, err
			}
			c.Parts = append(c.Parts, document.Part{Offset: body.Len(), Page: i + 1})
			writePage(body, text)
		}
		for _, l := range pageLinks(inst, d, page.Page) {
			if !seen[l] {
				seen[l] = true
				c.Links = append(c.Links, l)
			}
		}
		inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	}
	c.Body, c.Truncated = body.String(), body.Truncated()
	c.Parts = withBookmarks(c.Parts, bookmarks(inst, d), starts)
	return c, nil
}

// bookmark is an outline entry and the page it leads to.
type bookmark struct {
	title       string
	level, page int // page from 0
}

// maxBookmarks bounds the outline walked: a damaged file's outline may
// loop.
const maxBookmarks = 4096

// bookmarks walks the outline, depth first, in reading order.
func bookmarks(inst pdfium.Pdfium, d references.FPDF_DOCUMENT) []bookmark {
	var out []bookmark
	var walk func(parent *references.FPDF_BOOKMARK, level int)
	walk = func(parent *references.FPDF_BOOKMARK, level int) {
		if level > 16 {
			return
		}
		fc, err := inst.FPDFBookmark_GetFirstChild(&requests.FPDFBookmark_GetFirstChild{Document: d, Bookmark: parent})
		if err != nil || fc.Bookmark == nil {
			return
		}
		for b := fc.Bookmark; b != nil && len(out) < maxBookmarks; {
			bm := bookmark{level: level, page: -1}
			if t, err := inst.FPDFBookmark_GetTitle(&requests.FPDFBookmark_GetTitle{Bookmark: *b}); err == nil {
				bm.title = clean(t.Title)
			}
			if dest := bookmarkDest(inst, d, *b); dest != nil {
				if pi, err := inst.FPDFDest_GetDestPageIndex(&requests.FPDFDest_GetDestPageIndex{Document: d, Dest: *dest}); err == nil {
					bm.page = pi.Index
				}
			}
			out = append(out, bm)
			walk(b, level+1)
			next, err := inst.FPDFBookmark_GetNextSibling(&requests.FPDFBookmark_GetNextSibling{Document: d, Bookmark: *b})
			if err != nil {
				return
			}
			b = next.Bookmark
		}
	}
	walk(nil, 1)
	return out
}

// bookmarkDest is where a bookmark leads: its destination, or its GoTo
// action's, as LaTeX writes them; nil for none.
func bookmarkDest(inst pdfium.Pdfium, d references.FPDF_DOCUMENT, b references.FPDF_BOOKMARK) *references.FPDF_DEST {
	if dest, err := inst.FPDFBookmark_GetDest(&requests.FPDFBookmark_GetDest{Document: d, Bookmark: b}); err == nil && dest.Dest != nil {
		return dest.Dest
	}
	act, err := inst.FPDFBookmark_GetAction(&requests.FPDFBookmark_GetAction{Bookmark: b})
	if err != nil || act.Action == nil {
		return nil
	}
	if dest, err := inst.FPDFAction_GetDest(&requests.FPDFAction_GetDest{Document: d, Action: *act.Action}); err == nil {
		return dest.Dest
	}
	return nil
}

// withBookmarks puts each bookmark that leads to a page with text after
// that page's own part: its title heads the page's text (a bookmark
// leads to a page, not to a place on it).
func withBookmarks(pages []document.Part, marks []bookmark, starts []int) []document.Part {
	if len(marks) == 0 {
		return pages
	}
	byPage := map[int][]bookmark{}
	for _, b := range marks {
		if b.title != "" && b.page >= 0 {
			byPage[b.page+1] = append(byPage[b.page+1], b)
		}
	}
	out := make([]document.Part, 0, len(pages)+len(marks))
	for _, p := range pages {
		out = append(out, p)
		for _, b := range byPage[p.Page] {
			out = append(out, document.Part{Offset: starts[b.page], Page: p.Page, Title: b.title, Level: b.level})
		}
	}
	return out
}

func pageText(inst pdfium.Pdfium, page references.FPDF_PAGE) (string, error) {
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page}})
	if err != nil {
		return "", err
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	n, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil || n.Count <= 0 {
		return "", err
	}
	t, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: n.Count})
	if err != nil {
		return "", err
	}
	return t.Text, nil
}

// pageLinks are the targets of a page's link annotations with a URI
// action, in the order PDFium enumerates them.
func pageLinks(inst pdfium.Pdfium, d references.FPDF_DOCUMENT, page references.FPDF_PAGE) []string {
	var links []string
	pos := 0
	for range 10000 {
		e, err := inst.FPDFLink_Enumerate(&requests.FPDFLink_Enumerate{Page: requests.Page{ByReference: &page}, StartPos: pos})
		if err != nil || e.Link == nil || e.NextStartPos == nil || *e.NextStartPos <= pos {
			break
		}
		pos = *e.NextStartPos
		a, err := inst.FPDFLink_GetAction(&requests.FPDFLink_GetAction{Link: *e.Link})
		if err != nil || a.Action == nil {
			continue
		}
		t, err := inst.FPDFAction_GetType(&requests.FPDFAction_GetType{Action: *a.Action})
		if err != nil || t.Type != enums.FPDF_ACTION_ACTION_URI {
			continue
		}
		u, err := inst.FPDFAction_GetURIPath(&requests.FPDFAction_GetURIPath{Document: d, Action: *a.Action})
		if err != nil || u.URIPath == nil {
			continue
		}
		if s := strings.TrimSpace(*u.URIPath); s != "" {
			links = append(links, s)
		}
	}
	return links
}

// meta fills what the Info dictionary and the catalog say.
func meta(inst pdfium.Pdfium, d references.FPDF_DOCUMENT, c *document.Content) {
	get := func(tag string) string {
		m, err := inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: d, Tag: tag})
		if err != nil {
			return ""
		}
		return clean(m.Value)
	}
	c.Title = get("Title")
	c.Authors = authors(get("Author"))
	c.Subject = get("Subject")
	c.Keywords = split(get("Keywords"), ",;")
	c.Modified = parseDate(get("ModDate"))
	c.Created = parseDate(get("CreationDate"))
	if l, err := inst.FPDFCatalog_GetLanguage(&requests.FPDFCatalog_GetLanguage{Document: d}); err == nil {
		c.Language = clean(l.Language)
	}
}

// clean is a metadata string on one line, without the NULs and byte-order
// marks some producers leave in.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case 0, '\ufeff', '\ufffe':
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// authors splits an Author entry on semicolons, and on commas when every
// part between them has a space ("Ann Smith, Bob Jones"), which keeps
// "Smith, Ann" whole.
func authors(s string) []string {
	var out []string
	for _, a := range split(s, ";") {
		parts := split(a, ",")
		whole := len(parts) < 2
		for _, p := range parts {
			if !strings.Contains(p, " ") {
				whole = true
			}
		}
		if whole {
			out = append(out, a)
		} else {
			out = append(out, parts...)
		}
	}
	return out
}

func split(s, seps string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseDate reads a PDF date, D:YYYYMMDDHHmmSSOHH'mm', of which everything
// after the year may be missing; "" or an unreadable date is the zero time.
func parseDate(s string) time.Time {
	s = strings.TrimPrefix(strings.TrimSpace(s), "D:")
	num := func(i, n, def int) (int, bool) {
		if len(s) < i+n {
			return def, len(s) <= i
		}
		v := 0
		for _, b := range []byte(s[i : i+n]) {
			if b < '0' || b > '9' {
				return 0, false
			}
			v = v*10 + int(b-'0')
		}
		return v, true
	}
	y, ok := num(0, 4, 0)
	if !ok || len(s) < 4 {
		return time.Time{}
	}
	var f [5]int
	defs := [5]int{1, 1, 0, 0, 0}
	for k := range f {
		if f[k], ok = num(4+2*k, 2, defs[k]); !ok {
			return time.Time{}
		}
	}
	loc := time.UTC
	if len(s) > 14 {
		switch sign := s[14]; sign {
		case '+', '-':
			hh, _ := num(15, 2, 0)
			mm, _ := num(18, 2, 0)
			if len(s) > 17 && s[17] != '\'' {
				mm, _ = num(17, 2, 0)
			}
			off := hh*3600 + mm*60
			if sign == '-' {
				off = -off
			}
			loc = time.FixedZone("", off)
		}
	}
	t := time.Date(y, time.Month(f[0]), f[1], f[2], f[3], f[4], 0, loc)
	if f[0] < 1 || f[0] > 12 || f[1] < 1 || f[1] > 31 || t.Month() != time.Month(f[0]) {
		return time.Time{}
	}
	return t
}
