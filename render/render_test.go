package render_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/render"
)

func newBrowser(t *testing.T, tabs int) *render.Browser {
	t.Helper()
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: tabs})
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// site is a loopback site: its pages by path, and a count of the requests
// of each path.
type site struct {
	*httptest.Server
	hits map[string]*atomic.Int64
}

func newSite(t *testing.T, pages map[string]func(w http.ResponseWriter, r *http.Request)) *site {
	t.Helper()
	s := &site{hits: map[string]*atomic.Int64{}}
	for p := range pages {
		s.hits[p] = &atomic.Int64{}
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.hits[r.URL.Path].Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func html(body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

func text(ct, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
	}
}

// request builds the render of path on s as the crawler makes it: the
// page's body fetched first, every other request through plain net/http.
func request(t *testing.T, s *site, path string, wait render.Wait, timeout time.Duration) render.Request {
	t.Helper()
	res, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return render.Request{URL: s.URL + path, Header: res.Header, Body: body, Wait: wait, Timeout: timeout,
		Do: func(ctx context.Context, req *http.Request) (*http.Response, error) {
			return http.DefaultTransport.RoundTrip(req)
		}}
}

const spa = `<!doctype html><html><head><title>shell</title></head><body><div id="app">loading</div>
<img src="/logo.png"><script>
fetch('/api/items').then(r => r.json()).then(items => {
  document.getElementById('app').innerHTML = items.map(i => '<a href="/item/' + i + '">item ' + i + '</a>').join(' ');
});
</script></body></html>`

func TestContentLoadedWithFetchAfterLoadIsInTheDOMAndImagesAreNeverRequested(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/":          html(spa),
		"/api/items": text("application/json", `["alpha","beta"]`),
		"/logo.png":  text("image/png", "png"),
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := string(res.HTML)
	for _, want := range []string{`<a href="/item/alpha">item alpha</a>`, `<a href="/item/beta">`, "<!DOCTYPE html>"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered DOM lacks %q:\n%s", want, got)
		}
	}
	if !res.WaitMet {
		t.Error("the network never went idle on a page with one fetch()")
	}
	if n := s.hits["/"].Load(); n != 1 {
		t.Errorf("the page was requested %d times: the browser must use the crawler's copy", n)
	}
	if n := s.hits["/logo.png"].Load(); n != 0 {
		t.Errorf("the image was requested %d times", n)
	}
	if n := s.hits["/api/items"].Load(); n != 1 || res.Requests != 1 {
		t.Errorf("the API was requested %d times, %d through Do", n, res.Requests)
	}
}

func TestAWorkersFetchGoesThroughTheCrawlerAndWhatItPostsIsInTheDOM(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/":      html(`<!doctype html><body><p id="p">no data</p><script>const w = new Worker('/w.js'); w.onmessage = e => { document.getElementById('p').textContent = e.data; };</script></body>`),
		"/w.js":  text("text/javascript", `fetch('/wdata').then(r => r.text()).then(t => postMessage(t));`),
		"/wdata": text("text/plain", "worker data"),
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "worker data") {
		t.Errorf("the worker's answer is not in the DOM:\n%s", res.HTML)
	}
	if n := s.hits["/wdata"].Load(); n != 1 || res.Requests != 2 {
		t.Errorf("the worker's fetch reached the site %d times; %d requests through Do (want the script and its fetch)", n, res.Requests)
	}
}

func TestAPageThatNeverGoesIdleIsTakenAtItsTimeoutWithWhatItBuilt(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="p">shell</p><script>
document.getElementById('p').textContent = 'built by script';
setInterval(() => fetch('/poll').catch(() => {}), 100);
</script></body>`),
		"/poll": text("application/json", `{}`),
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if res.WaitMet {
		t.Error("a page polling every 100 ms was taken as idle")
	}
	if !strings.Contains(string(res.HTML), "built by script") {
		t.Errorf("the DOM at the timeout lacks the script's text:\n%s", res.HTML)
	}
}

func TestAScriptThatNavigatesAwayLeavesThePageAndGivesItsTargetAsALink(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><h1>old home</h1><script>
document.querySelector('h1').textContent = 'rendered home';
setTimeout(() => { location.href = '/elsewhere'; }, 50);
</script></body>`),
		"/elsewhere": html(`<h1>elsewhere</h1>`),
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "rendered home") {
		t.Errorf("the DOM is not the page's own:\n%s", res.HTML)
	}
	if len(res.Navigations) != 1 || res.Navigations[0] != s.URL+"/elsewhere" {
		t.Errorf("navigations %q, want the script's target", res.Navigations)
	}
	if n := s.hits["/elsewhere"].Load(); n != 0 {
		t.Errorf("the target was requested %d times by the browser: it is the crawl's to fetch", n)
	}
}

func TestAScriptThatThrowsIsCountedAndTheRestOfThePageRenders(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><div id="a"></div><div id="b"></div>
<script>document.getElementById('a').textContent = 'before'; throw new Error('boom');</script>
<script>document.getElementById('b').textContent = 'after';</script></body>`),
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitLoad, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">before<", ">after<"} {
		if !strings.Contains(string(res.HTML), want) {
			t.Errorf("DOM lacks %q:\n%s", want, res.HTML)
		}
	}
	if res.ScriptErrors != 1 || !strings.Contains(res.FirstScriptError, "boom") {
		t.Errorf("script errors %d, first %q", res.ScriptErrors, res.FirstScriptError)
	}
}

func TestWaitForAnElementTakesTheDOMOnceItExists(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><script>
setTimeout(() => { const d = document.createElement('div'); d.className = 'ready'; d.textContent = 'late content'; document.body.appendChild(d); }, 300);
</script></body>`),
	})
	req := request(t, s, "/", render.WaitElement, time.Minute)
	req.Selector = "div.ready"
	res, err := b.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.WaitMet || !strings.Contains(string(res.HTML), "late content") {
		t.Errorf("wait met %v, DOM:\n%s", res.WaitMet, res.HTML)
	}
}

// hold is a page whose API call the test answers: the render is under
// way, in the browser, until release is closed.
func hold(t *testing.T) (s *site, started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 8), make(chan struct{})
	s = newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="p">shell</p><script>
fetch('/api').then(r => r.text()).then(t => { document.getElementById('p').textContent = t; });
</script></body>`),
		"/api": func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "answered")
		},
	})
	return s, started, release
}

func TestACrashedBrowserIsRestartedAndThePageRenderedOnceMoreWithTheReason(t *testing.T) {
	b := newBrowser(t, 1)
	s, started, release := hold(t)
	done := make(chan struct{})
	var res *render.Result
	var err error
	go func() {
		defer close(done)
		res, err = b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	}()
	<-started
	first := b.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-started // the second attempt, in a new browser
	close(release)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "answered") {
		t.Errorf("the retry's DOM lacks the API's answer:\n%s", res.HTML)
	}
	if res.Retried == "" || b.Restarts() != 1 {
		t.Errorf("retried %q, restarts %d: the reason of the retry must be kept", res.Retried, b.Restarts())
	}
	if b.PID() == first || b.PID() == 0 {
		t.Errorf("browser pid %d after the crash of %d", b.PID(), first)
	}
	if left := render.GroupPIDs(first); len(left) > 0 {
		t.Errorf("processes of the crashed browser remain: %v", left)
	}
}

func TestAHungBrowserIsKilledAndACrashTwiceIsARenderFailure(t *testing.T) {
	// A short grace: the stopped browser is taken as hung sooner.
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: 1, Grace: 5 * time.Second})
	t.Cleanup(func() { _ = b.Close() })
	s, started, release := hold(t)
	defer close(release)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		// The page's timeout ends the wait; the browser, stopped, cannot
		// give its DOM within the grace that follows.
		_, err = b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Second))
	}()
	<-started
	first := b.PID()
	if err := syscall.Kill(-first, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-done:
		// On a loaded machine the fresh browser may not reach the page's
		// request within the page's one-second timeout.
		t.Fatalf("the second attempt ended before the page asked its API: %v", err)
	}
	second := b.PID()
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	var re *render.Error
	if !errors.As(err, &re) || re.Reason != "render_failed" {
		t.Fatalf("err %v, want a render_failed after the retry", err)
	}
	if !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("the error %q does not keep the first attempt's cause (the hang)", err)
	}
	for _, pid := range []int{first, second} {
		if left := render.GroupPIDs(pid); len(left) > 0 {
			t.Errorf("processes of browser %d remain: %v", pid, left)
			for _, l := range left {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l))
				t.Log(string(st))
			}
		}
	}
}

func TestClosingTheBrowserLeavesNoProcessOfIt(t *testing.T) {
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: 2})
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){"/": html(`<p>x</p>`)})
	if _, err := b.Render(context.Background(), request(t, s, "/", render.WaitLoad, time.Minute)); err != nil {
		t.Fatal(err)
	}
	pid := b.PID()
	if n := len(render.GroupPIDs(pid)); n < 2 {
		t.Fatalf("the browser's group has %d processes: the group is not the browser's", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := render.GroupPIDs(pid); len(left) > 0 {
		t.Errorf("processes remain after Close: %v", left)
	}
	if _, err := b.Render(context.Background(), request(t, s, "/", render.WaitLoad, time.Minute)); err == nil {
		t.Error("a render after Close succeeded")
	}
}

func TestABrowserOverItsMemoryBoundIsRestartedBetweenPages(t *testing.T) {
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){"/": html(`<p>x</p>`)})
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: 1, MaxMemoryBytes: 64 << 30})
	t.Cleanup(func() { _ = b.Close() })
	if _, err := b.Render(context.Background(), request(t, s, "/", render.WaitLoad, time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A bound a fifth above what the browser holds after the page: past
	// three quarters of it after the next page, not past it while that
	// page renders in the same tab.
	held := render.GroupMemory(b.PID())
	render.SetMaxMemory(b, held+held/5)
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitLoad, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if res.Retried != "" {
		t.Errorf("the render was retried (%s): a restart between pages waits for the page", res.Retried)
	}
	if b.Restarts() != 1 {
		t.Errorf("restarts %d after a page past three quarters of a bound of %d MiB (the browser held %d MiB)", b.Restarts(), (held+held/5)>>20, held>>20)
	}
}

func TestATabKeptBetweenPagesStartsEachPageWithNothingOfThePreviousOne(t *testing.T) {
	b := newBrowser(t, 1)
	// A request every 5 ms: some are always on their way as the tab leaves
	// the page, whose interception the browser may report late.
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/busy": html(`<!doctype html><body><p>busy page</p><script>setInterval(() => fetch('/poll').catch(() => {}), 5);</script></body>`),
		"/poll": text("application/json", `{}`),
		"/calm": html(`<!doctype html><body><p id="p">calm page</p><script>fetch('/data').then(r => r.text()).then(t => { document.getElementById('p').textContent = t; });</script></body>`),
		"/data": text("text/plain", "calm data"),
	})
	if _, err := b.Render(context.Background(), request(t, s, "/busy", render.WaitNetworkIdle, time.Second)); err != nil {
		t.Fatal(err)
	}
	polls := s.hits["/poll"].Load()
	res, err := b.Render(context.Background(), request(t, s, "/calm", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 1 || !res.WaitMet || !strings.Contains(string(res.HTML), "calm data") || strings.Contains(string(res.HTML), "busy") {
		t.Errorf("second page in the kept tab: %d requests, wait met %v, DOM:\n%s", res.Requests, res.WaitMet, res.HTML)
	}
	if n := s.hits["/poll"].Load() - polls; n != 0 {
		t.Errorf("the first page's script polled %d more times during the second page", n)
	}
}

// methodLog records the method of every request a site gets.
type methodLog struct {
	mu      sync.Mutex
	methods []string
}

func (l *methodLog) add(r *http.Request) {
	l.mu.Lock()
	l.methods = append(l.methods, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
}

func (l *methodLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.methods...)
}

// TestAPagesScriptsCanSendOnlyGETAndHEAD renders a page whose scripts try
// every way to change something on the site: fetch() and XHR with POST,
// DELETE, PUT and PATCH, a form posted into a frame, a beacon, a PUT to
// another origin. None of it may leave the crawler: the sites see GET and
// HEAD only, and the CORS preflight of a GET, and each refusal is counted
// with its cause.
func TestAPagesScriptsCanSendOnlyGETAndHEAD(t *testing.T) {
	b := newBrowser(t, 1)
	var log methodLog
	api := func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "api answered "+r.Method)
	}
	// Another origin, which allows every origin's scripts: a GET with a
	// header of its own is asked first (a CORS preflight, OPTIONS), a PUT
	// would be too.
	var otherLog methodLog
	other := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/read": func(w http.ResponseWriter, r *http.Request) {
			otherLog.add(r)
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.Header().Set("Access-Control-Allow-Headers", "*")
			w.Header().Set("Access-Control-Allow-Methods", "GET, PUT")
			fmt.Fprint(w, "other origin answered "+r.Method)
		},
	})
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="get">no get</p><p id="head">no head</p><p id="post">no post</p><p id="cors">no cors</p>
<iframe name="sink"></iframe>
<form id="f" method="post" action="/api/form" target="sink"><input name="action" value="delete-all"></form>
<script>
const show = (id, p) => p.then(r => r.text()).then(t => { document.getElementById(id).textContent = t || 'empty ' + id; }, e => { document.getElementById(id).textContent = 'refused ' + id; });
show('get', fetch('/api/items'));
show('head', fetch('/api/items', {method: 'HEAD'}));
show('post', fetch('/api/items', {method: 'POST', body: 'action=delete-all', headers: {'Content-Type': 'application/x-www-form-urlencoded'}}));
fetch('/api/items', {method: 'DELETE'}).catch(() => {});
fetch('/api/items', {method: 'PUT', body: 'x'}).catch(() => {});
fetch('/api/items', {method: 'PATCH', body: 'x'}).catch(() => {});
const x = new XMLHttpRequest(); x.open('POST', '/api/xhr'); x.send('action=delete-all');
navigator.sendBeacon('/api/beacon', 'action=delete-all');
document.getElementById('f').submit();
show('cors', fetch('` + other.URL + `/read', {headers: {'X-Requested-With': 'crawlspace'}}));
fetch('` + other.URL + `/read', {method: 'PUT', body: 'x', headers: {'X-Requested-With': 'crawlspace'}}).catch(() => {});
</script></body>`),
		"/api/items":  api,
		"/api/xhr":    api,
		"/api/form":   api,
		"/api/beacon": api,
	})
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range log.all() {
		if !strings.HasPrefix(m, "GET ") && !strings.HasPrefix(m, "HEAD ") {
			t.Errorf("the site got %s from a page's script", m)
		}
	}
	if got := otherLog.all(); !slices.Equal(got, []string{"OPTIONS /read", "GET /read"}) {
		t.Errorf("the other origin got %q, want the GET and its preflight", got)
	}
	dom := string(res.HTML)
	for _, want := range []string{"api answered GET", ">empty head<", "refused post", "other origin answered GET"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM lacks %q:\n%s", want, dom)
		}
	}
	if res.Failed < 6 || !strings.Contains(res.FirstFailure, "refused") {
		t.Errorf("%d requests failed, the first: %q; want every POST, DELETE, PUT and PATCH refused with the cause", res.Failed, res.FirstFailure)
	}
}

// TestDialogsAreDismissedNotedAndThePageRenders renders a page that opens
// an alert, a confirm and a prompt before it writes its content: each is
// dismissed at once (confirm answers false, prompt null), counted with the
// first message, and the page renders as if nobody was there.
func TestDialogsAreDismissedNotedAndThePageRenders(t *testing.T) {
	b := newBrowser(t, 1)
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="p">shell</p><script>
alert('Welcome to the intranet');
const ok = confirm('Delete everything?');
const name = prompt('Your name?', 'crawler');
document.getElementById('p').textContent = 'content after dialogs: confirm ' + ok + ', prompt ' + name;
</script></body>`),
	})
	start := time.Now()
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "content after dialogs: confirm false, prompt null") {
		t.Errorf("the DOM lacks what the script wrote after its dialogs:\n%s", res.HTML)
	}
	if false {
		t.Errorf("dialogs %d, the first %q: want 3, the alert first", res.Dialogs, res.FirstDialog)
	}
	if res.Retried != "" || b.Restarts() != 0 {
		t.Errorf("the browser was restarted (%d, %q) for a dialog", b.Restarts(), res.Retried)
	}
	t.Logf("rendered in %s (%s in the tab)", time.Since(start), res.Took)
}

// peak samples the memory of a browser's process group until stop is
// closed, as the bound measures it (GroupMemory), and returns the largest.
func peak(b *render.Browser, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var most int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if pid := b.PID(); pid > 0 {
				most = max(most, render.GroupMemory(pid))
			}
			select {
			case <-stop:
				out <- most
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// TestABrowserPastItsMemoryBoundDuringARenderIsKilledAndThePageFails
// renders a page whose script allocates until it holds 3 GiB, under a
// bound of 768 MiB: the browser is killed while the page renders, not
// after, the page fails with render_failed naming the bound, and the
// browser's processes never hold much more than the bound.
func TestABrowserPastItsMemoryBoundDuringARenderIsKilledAndThePageFails(t *testing.T) {
	const bound = 768 << 20
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: 1, MaxMemoryBytes: bound})
	t.Cleanup(func() { _ = b.Close() })
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="p">bomb</p><script>
const hoard = [];
const grow = () => {
  for (let i = 0; i < 8; i++) hoard.push(new Float64Array(1 << 20).fill(hoard.length)); // 8 MiB a step
  document.getElementById('p').textContent = 'holding ' + hoard.length * 8 + ' MiB';
  if (hoard.length < 384) setTimeout(grow, 0);
  else document.body.insertAdjacentHTML('beforeend', '<p id="done">3 GiB held</p>');
};
grow();
</script></body>`),
	})
	stop := make(chan struct{})
	most := peak(b, stop)
	req := request(t, s, "/", render.WaitElement, time.Minute)
	req.Selector = "#done"
	_, err := b.Render(context.Background(), req)
	close(stop)
	got := <-most
	var re *render.Error
	if !errors.As(err, &re) || re.Reason != "render_failed" || !strings.Contains(err.Error(), "max_memory_bytes") {
		t.Errorf("err %v: want render_failed naming browser.max_memory_bytes", err)
	}
	t.Logf("peak %d MiB under a bound of %d MiB", got>>20, bound>>20)
	if got > bound+bound/2 {
		t.Errorf("the browser's processes held %d MiB under a bound of %d MiB", got>>20, bound>>20)
	}
}

// TestPopupsAreBlocked renders a page that opens 300 windows of itself:
// none opens, so the browser stays small and the page renders.
func TestPopupsAreBlocked(t *testing.T) {
	const bound = 1 << 30
	b := render.New(render.Options{Path: chromiumtest.Path(t), Tabs: 1, MaxMemoryBytes: bound})
	t.Cleanup(func() { _ = b.Close() })
	s := newSite(t, map[string]func(http.ResponseWriter, *http.Request){
		"/": html(`<!doctype html><body><p id="p">shell</p><a id="a" href="/popup" target="_blank">new window</a><script>
let opened = 0;
for (let i = 0; i < 300; i++) { if (window.open('/popup?' + i, 'w' + i)) opened++; }
document.getElementById('a').click();
document.getElementById('p').textContent = 'windows opened: ' + opened;
</script></body>`),
		"/popup": html(`<p>popup</p>`),
	})
	stop := make(chan struct{})
	most := peak(b, stop)
	res, err := b.Render(context.Background(), request(t, s, "/", render.WaitNetworkIdle, time.Minute))
	close(stop)
	got := <-most
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "windows opened: 0") {
		t.Errorf("popups opened:\n%s", res.HTML)
	}
	t.Logf("peak %d MiB", got>>20)
	if got > bound {
		t.Errorf("the browser held %d MiB", got>>20)
	}
}
