package robots

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// Fetcher GETs a robots.txt URL. The provider supplies it so that robots.txt
// goes through the same per-host politeness limits and HTTP client as pages;
// the client follows redirects as Client does (RFC 9309 2.3.1.2: five hops,
// then the last 3xx). A non-nil err means the server could not be reached.
// The cache closes body.
type Fetcher func(ctx context.Context, robotsURL string) (status int, body io.ReadCloser, err error)

// ErrUnavailable is matched (errors.Is) by the error Cache.Get returns while
// a robots.txt is unreachable: everything is disallowed until RetryAt, so the
// caller should postpone the URL rather than exclude it.
var ErrUnavailable = errors.New("robots.txt unreachable")

// UnavailableError describes an unreachable robots.txt (5xx, 429, network
// error) and when the cache will try again.
type UnavailableError struct {
	URL     string
	Status  int   // 0 when the server was not reached
	Err     error // the network or read error, if any
	Since   time.Time
	RetryAt time.Time
}

func (e *UnavailableError) Error() string {
	if e.Err != nil {
		cause := e.Err
		var ue *url.Error
		if errors.As(cause, &ue) {
			cause = ue.Err // it repeats the URL
		}
		return fmt.Sprintf("robots.txt %s unreachable: %v", e.URL, cause)
	}
	return fmt.Sprintf("robots.txt %s unreachable: HTTP %d", e.URL, e.Status)
}

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *UnavailableError) Unwrap() error        { return e.Err }

// CacheOptions configures a Cache. Zero fields take the defaults shown.
type CacheOptions struct {
	// UserAgent is the crawler's User-Agent; its product token selects the
	// group Cache.Allowed applies.
	UserAgent string
	// TTL is how long a fetched robots.txt is trusted: 24h, also the maximum
	// (RFC 9309 2.4).
	TTL time.Duration
	// RetryMin and RetryMax bound the doubling wait before an unreachable
	// robots.txt is fetched again: 1m and 30m.
	RetryMin, RetryMax time.Duration
	// StaleAfter is how long a robots.txt must stay unreachable before the
	// last good copy is used again instead of disallowing everything (RFC
	// 9309 2.3.1.4 suggests 30 days): 30 days.
	StaleAfter time.Duration
	// MaxEntries and MaxBytes bound memory, least recently used origins
	// going first: 10,000 origins and 64 MiB of parsed rules.
	MaxEntries int
	MaxBytes   int
	// Now is the clock, for tests: time.Now.
	Now func() time.Time
}

// Cache holds robots.txt rules per origin (scheme, host, port), fetching each
// at most once at a time. It is safe for concurrent use.
type Cache struct {
	fetch Fetcher
	opts  CacheOptions

	mu      sync.Mutex
	entries map[string]*entry
	lru     list.List // of *entry, most recently used first
	bytes   int
}

type entry struct {
	key          string
	elem         *list.Element
	rules        *Rules // what Get serves; nil until the first fetch ends
	err          error  // *UnavailableError while rules is the fallback
	expires      time.Time
	good         *Rules // last copy fetched successfully, kept through failures
	failures     int
	failingSince time.Time
	flight       chan struct{} // closed when the fetch in progress ends
	size         int
}

// NewCache returns a cache that fetches robots.txt files with fetch.
func NewCache(fetch Fetcher, opts CacheOptions) *Cache {
	const day = 24 * time.Hour
	if opts.TTL <= 0 || opts.TTL > day {
		opts.TTL = day
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = time.Minute
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(30*time.Minute, opts.RetryMin)
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 30 * day
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 10000
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 64 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{fetch: fetch, opts: opts, entries: make(map[string]*entry)}
}

// Allowed reports whether the cache's user agent may fetch u, with the
// deciding rule for explanations. While u's robots.txt is unreachable it
// returns false and an error matching ErrUnavailable.
func (c *Cache) Allowed(ctx context.Context, u *url.URL) (bool, string, error) {
	r, err := c.Get(ctx, u)
	if r == nil {
		return false, "", err
	}
	ok, line := r.Test(c.opts.UserAgent, u.RequestURI())
	return ok, line, err
}

// Get returns the rules for u's origin, fetching robots.txt when it is not
// cached or has expired. A 4xx answer yields rules that allow everything. A
// 5xx, 429 or network failure yields rules that disallow everything together
// with an *UnavailableError (matching ErrUnavailable); the fetch is retried
// after a backoff. Other errors (a cancelled ctx, a URL that is not http or
// https) come with nil rules.
func (c *Cache) Get(ctx context.Context, u *url.URL) (*Rules, error) {
	key, robotsURL, err := origin(u)
	if err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		e := c.entries[key]
		if e != nil && e.flight != nil {
			done := e.flight
			c.mu.Unlock()
			select {
			case <-done:
				continue // look again: the fetch may have been cancelled
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if e != nil && e.rules != nil && c.opts.Now().Before(e.expires) {
			c.lru.MoveToFront(e.elem)
			r, err := e.rules, e.err
			c.mu.Unlock()
			return r, err
		}
		if e == nil {
			e = &entry{key: key}
			e.elem = c.lru.PushFront(e)
			c.entries[key] = e
		}
		done := make(chan struct{})
		e.flight = done
		c.mu.Unlock()
		return c.fill(ctx, e, done, robotsURL)
	}
}

// fill fetches robots.txt for e and publishes the outcome, releasing the
// waiters even if the fetcher panics.
func (c *Cache) fill(ctx context.Context, e *entry, done chan struct{}, robotsURL string) (r *Rules, err error) {
	var res result
	fetched := false
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		e.flight = nil
		close(done)
		if !fetched {
			if e.rules == nil && c.entries[e.key] == e {
				c.remove(e)
			}
			return
		}
		c.store(e, res, robotsURL)
		r, err = e.rules, e.err
	}()
	res, err = c.load(ctx, robotsURL)
	fetched = err == nil
	return nil, err
}

// result is the outcome of one robots.txt fetch: rules, or a failure.
type result struct {
	rules  *Rules
	status int
	err    error
}

// load fetches and classifies robotsURL. Its error is the caller's context
// ending, which says nothing about the server and is not cached.
func (c *Cache) load(ctx context.Context, robotsURL string) (result, error) {
	status, body, err := c.fetch(ctx, robotsURL)
	if body != nil {
		defer body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return result{}, ctx.Err()
		}
		return result{err: err}, nil
	}
	switch {
	case status >= 200 && status < 300:
		if body == nil {
			return result{rules: Parse(nil)}, nil
		}
		// One byte past the cap tells Parse the last line may be cut.
		data, err := io.ReadAll(io.LimitReader(body, MaxSize+1))
		if err != nil {
			if ctx.Err() != nil {
				return result{}, ctx.Err()
			}
			return result{status: status, err: err}, nil
		}
		// Drain a little so the connection can be reused; past that,
		// closing is cheaper than reading a hostile file to its end.
		_, _ = io.CopyN(io.Discard, body, 64<<10)
		return result{rules: Parse(data)}, nil
	case status == http.StatusTooManyRequests || status >= 500 && status < 600:
		// 429 is a server asking for less load, treated like 5xx as
		// Google does; RFC 9309 2.3.1.4 says 5xx means complete disallow.
		return result{status: status}, nil
	case status >= 300 && status < 500:
		// RFC 9309 2.3.1.3: 4xx means no robots.txt, so no restrictions;
		// 2.3.1.2: a 3xx left over after the client's redirect limit may
		// be treated the same way.
		return result{rules: AllowAll()}, nil
	}
	return result{status: status}, nil
}

// store records a fetch outcome in e. Callers hold c.mu.
func (c *Cache) store(e *entry, res result, robotsURL string) {
	now := c.opts.Now()
	if res.rules != nil {
		e.rules, e.err, e.good = res.rules, nil, res.rules
		e.failures, e.failingSince = 0, time.Time{}
		e.expires = now.Add(c.opts.TTL)
	} else {
		if e.failures == 0 {
			e.failingSince = now
		}
		e.failures++
		wait := c.opts.RetryMax
		if e.failures <= 20 {
			wait = min(c.opts.RetryMin<<(e.failures-1), c.opts.RetryMax)
		}
		e.expires = now.Add(wait)
		if e.good != nil && now.Sub(e.failingSince) >= c.opts.StaleAfter {
			e.rules, e.err = e.good, nil
		} else {
			ue := &UnavailableError{URL: robotsURL, Status: res.status, Err: res.err, Since: e.failingSince, RetryAt: e.expires}
			e.rules, e.err = disallowAll(ue.Error()+": everything disallowed until a retry succeeds"), ue
		}
	}
	if c.entries[e.key] != e {
		return // evicted while fetching
	}
	size := 64 + len(e.key) + e.rules.size
	if e.good != nil && e.good != e.rules {
		size += e.good.size
	}
	c.bytes += size - e.size
	e.size = size
	c.lru.MoveToFront(e.elem)
	for (len(c.entries) > c.opts.MaxEntries || c.bytes > c.opts.MaxBytes) && c.lru.Len() > 1 {
		c.remove(c.lru.Back().Value.(*entry))
	}
}

func (c *Cache) remove(e *entry) {
	delete(c.entries, e.key)
	c.lru.Remove(e.elem)
	c.bytes -= e.size
}

// origin returns the cache key (scheme://host:port) and robots.txt URL of u.
// User information is left out: it must not reach logs or other requests.
func origin(u *url.URL) (key, robotsURL string, err error) {
	if u == nil {
		return "", "", errors.New("robots: nil URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "", fmt.Errorf("robots: scheme %q has no robots.txt", u.Scheme)
	}
	defPort := urlnorm.DefaultPort(scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", "", errors.New("robots: URL has no host")
	}
	port := u.Port()
	if port == "" {
		port = defPort
	}
	key = scheme + "://" + net.JoinHostPort(host, port)
	if port != defPort {
		return key, key + "/robots.txt", nil
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return key, scheme + "://" + host + "/robots.txt", nil
}

// MaxRedirects is the hop count RFC 9309 2.3.1.2 asks crawlers to follow.
const MaxRedirects = 5

// Client returns a copy of client (nil: the default client) that follows
// robots.txt redirects as RFC 9309 2.3.1.2 asks: at most MaxRedirects,
// after which the last 3xx is returned, which the cache reads as an
// unavailable robots.txt, so everything is allowed; a redirect loop ends
// the same way. client's own CheckRedirect still sees each hop it follows.
// Every fetcher of robots.txt should use it, so they all agree.
func Client(client *http.Client) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	cl := *client
	prev := cl.CheckRedirect
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return http.ErrUseLastResponse
		}
		if prev != nil {
			return prev(req, via)
		}
		return nil
	}
	return &cl
}
