package render_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/render"
)

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
