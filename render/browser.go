// Package render turns a fetched HTML page into the DOM its scripts build,
// in headless Chromium driven over the DevTools protocol (chromedp).
//
// The crawler fetches the page itself (the conditional GET, robots.txt,
// politeness and the crawl space stay where they are); the browser is
// handed those bytes for the page's own URL and asks for everything else
// (scripts, fetch() and XHR calls, stylesheets, frames) through Request.Do,
// which the caller backs with the source's own HTTP client: the address
// rules, TLS settings, proxy, credentials and sign-in session of the source
// apply to every request a script makes. Chromium itself is given no
// network at all (a resolver that finds nothing and a proxy that answers
// nothing), so a request that escaped the interception would fail.
//
// One Browser is one Chromium process shared by every source, with a pool
// of tabs kept between pages, a memory bound on the whole process group,
// and restarts: a page
// whose browser crashed or hung is rendered once more in a fresh browser,
// and the reason is kept in the Result.
package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// Options are the settings of the browser, shared by every source.
type Options struct {
	// Path is the Chromium executable.
	Path string
	// Tabs bounds the pages rendered at once.
	Tabs int
	// MaxMemoryBytes bounds the memory of the browser's processes
	// together (GroupMemory): past it while pages render, the browser is
	// killed at once and its pages fail (each tried once more in a fresh
	// browser); past three quarters of it after a page, the browser is
	// restarted once its tabs are done.
	MaxMemoryBytes int64
	// Grace is how long the browser may take to answer a command past a
	// page's timeout before it is taken as hung; DefaultGrace when 0.
	Grace time.Duration
	Log   *slog.Logger
	// Now is the crawler's clock, which times pages and their quiet
	// periods; time.Now when nil. The waits on the browser itself stay on
	// real timers: Chromium runs in real time.
	Now func() time.Time
}

// Browser is a Chromium process started on first use and its pool of tabs.
// It is safe for concurrent use.
type Browser struct {
	opts Options
	tabs chan struct{}
	// maxMemory is Options.MaxMemoryBytes, which a test may lower.
	maxMemory atomic.Int64

	mu       sync.Mutex
	cur      *instance
	gen      int
	closed   bool
	restarts int
	// draining is closed once a browser being retired has ended: no new
	// one starts before, so the bound holds for one browser at a time.
	draining chan struct{}
}

// instance is one run of the browser process.
type instance struct {
	gen         int
	ctx         context.Context // the browser's chromedp context
	cancel      context.CancelFunc
	allocCancel context.CancelFunc
	pid         int
	// idle holds the tabs between pages.
	idle  chan *pageTab
	grace time.Duration
	now   func() time.Time
	// rendering counts the pages being rendered, which watchMemory
	// watches; overMemory is why it killed the browser, "" until it did.
	rendering  atomic.Int32
	overMemory atomic.Pointer[string]
	busy       sync.WaitGroup
	once       sync.Once
}

// ErrClosed is the error of a render after Close.
var ErrClosed = errors.New("the browser is closed")

// New returns a browser that starts on its first Render.
func New(opts Options) *Browser {
	if opts.Tabs < 1 {
		opts.Tabs = 1
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Browser{opts: opts, tabs: make(chan struct{}, opts.Tabs)}
	b.maxMemory.Store(opts.MaxMemoryBytes)
	return b
}

// acquire returns the running browser, starting one if none runs, and
// counts the caller as one of its users until release.
func (b *Browser) acquire() (*instance, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, ErrClosed
		}
		if d := b.draining; d != nil {
			b.mu.Unlock()
			<-d
			continue
		}
		if b.cur == nil {
			in, err := b.start()
			if err != nil {
				b.mu.Unlock()
				return nil, err
			}
			b.cur = in
		}
		in := b.cur
		in.busy.Add(1)
		b.mu.Unlock()
		return in, nil
	}
}

func (in *instance) release() { in.busy.Done() }

// start launches Chromium. Called with b.mu held.
func (b *Browser) start() (*instance, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0], chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(b.opts.Path),
		chromedp.DisableGPU,
		// Chromium gets no network of its own: every request of a page is
		// answered through the crawler (Request.Do). These make anything
		// that escaped the interception (a preconnect, a WebSocket, a
		// service worker's fetch) fail instead of reaching a host.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("blink-settings", "imagesEnabled=false"),
		// chromedp turns Chrome's popup blocker off; on, a window a script
		// opens without a user's click (nobody clicks here) is never
		// made: window.open answers null, a target=_blank link stays put.
		// Three hundred windows of a page held two gigabytes.
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, so every process of the browser is
			// ended at once (and a hung group left behind gets the kernel's
			// SIGHUP), and the parent-death signal: a crawler that dies,
			// even by SIGKILL, takes its browser with it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp's own messages go to the crawler's log, at debug level:
	// what a render ends with is reported by the crawler.
	logf := func(format string, args ...any) { b.opts.Log.Debug("chromedp: " + fmt.Sprintf(format, args...)) }
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf), chromedp.WithLogf(logf))
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		allocCancel()
		return nil, fmt.Errorf("starting %s: %s", b.opts.Path, startFailure(err))
	}
	b.gen++
	in := &instance{gen: b.gen, ctx: ctx, cancel: cancel, allocCancel: allocCancel, idle: make(chan *pageTab, b.opts.Tabs), grace: b.opts.Grace, now: b.opts.Now}
	if p := chromedp.FromContext(ctx).Browser.Process(); p != nil {
		in.pid = p.Pid
	}
	b.opts.Log.Debug("browser started", "path", b.opts.Path, "pid", in.pid, "run", in.gen)
	if b.maxMemory.Load() > 0 && in.pid > 0 {
		go b.watchMemory(in)
	}
	return in, nil
}

// stop ends the browser's whole process group. A browser told to close
// may take its time; the crawler does not wait on it.
func (in *instance) stop() {
	in.once.Do(func() {
		if in.pid > 0 {
			_ = syscall.Kill(-in.pid, syscall.SIGKILL)
		}
		in.cancel()
		in.allocCancel()
	})
}

// retire takes the browser of run gen out of use: with now, at once (it
// crashed or hangs, and its pages fail); else once its pages are done.
func (b *Browser) retire(gen int, now bool, why string) {
	b.mu.Lock()
	in := b.cur
	if in == nil || in.gen != gen {
		b.mu.Unlock()
		return
	}
	b.cur = nil
	b.restarts++
	b.opts.Log.Warn("browser restarted", "reason", why, "pid", in.pid, "run", in.gen)
	if now {
		b.mu.Unlock()
		in.stop()
		return
	}
	done := make(chan struct{})
	b.draining = done
	b.mu.Unlock()
	go func() {
		in.busy.Wait()
		in.stop()
		b.mu.Lock()
		b.draining = nil
		b.mu.Unlock()
		close(done)
	}()
}

// Close ends the browser and every process of it. Renders after it fail
// with ErrClosed.
func (b *Browser) Close() error {
	b.mu.Lock()
	b.closed = true
	in := b.cur
	b.cur = nil
	d := b.draining
	b.mu.Unlock()
	if in != nil {
		in.stop()
	}
	if d != nil {
		<-d
	}
	return nil
}

// PID is the process id of the running browser, 0 when none runs. Its
// process group has the same id.
func (b *Browser) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return 0
	}
	return b.cur.pid
}

// Restarts counts the browsers retired: crashed, hung or over the memory bound.
func (b *Browser) Restarts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restarts
}

// checkMemory retires the browser, once its pages are done, when its
// processes together hold more than three quarters of the bound: a
// browser that creeps up over many pages is renewed before it reaches the
// bound, where watchMemory kills it under the pages it renders.
func (b *Browser) checkMemory(in *instance) {
	bound := b.maxMemory.Load()
	if bound <= 0 || in.pid == 0 {
		return
	}
	if held, over := groupOver(in.pid, bound/4*3); over {
		b.retire(in.gen, false, fmt.Sprintf("its processes hold %d MiB, past three quarters of browser.max_memory_bytes (%d MiB)", held>>20, bound>>20))
	}
}

// memoryPoll is how often the memory of a browser rendering pages is
// measured. A page's script can allocate a gigabyte a second; each look
// costs a read of /proc for every process of the machine and, once the
// group's resident sizes pass the bound, of each of its processes' page
// tables.
const memoryPoll = 100 * time.Millisecond

// watchMemory kills the browser the moment its processes hold more than
// the bound while pages render: the check between pages comes too late
// for a page that grows until its timeout, and a page that opens windows
// or allocates without end would take the machine's memory first.
func (b *Browser) watchMemory(in *instance) {
	tick := time.NewTicker(memoryPoll)
	defer tick.Stop()
	for {
		select {
		case <-in.ctx.Done():
			return
		case <-tick.C:
		}
		if in.rendering.Load() == 0 {
			continue
		}
		bound := b.maxMemory.Load()
		if held, over := groupOver(in.pid, bound); over {
			why := fmt.Sprintf("the browser's processes held %d MiB, over browser.max_memory_bytes (%d MiB): killed while rendering", held>>20, bound>>20)
			in.overMemory.Store(&why)
			b.retire(in.gen, true, why)
			return
		}
	}
}

// killedFor is why watchMemory killed the browser, "" when it did not.
func (in *instance) killedFor() string {
	if why := in.overMemory.Load(); why != nil {
		return *why
	}
	return ""
}

// DefaultGrace is how long a live browser gets, past the page's own timeout, to
// answer the commands that take the DOM and close the tab: one that takes
// longer hangs.
const DefaultGrace = 15 * time.Second

// startFailure is why Chromium would not start: its FATAL lines when it
// printed any, not the screenful of warnings around them.
func startFailure(err error) string {
	var fatal []string
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if strings.Contains(line, ":FATAL:") {
			fatal = append(fatal, strings.TrimSpace(line))
		}
	}
	if len(fatal) == 0 {
		return err.Error()
	}
	return strings.Join(fatal, "; ")
}
