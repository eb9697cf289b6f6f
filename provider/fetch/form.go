package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/publicsuffix"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/redact"
)

// maxLoginPage bounds what a sign-in reads of the login page and of the
// answer to the post.
const maxLoginPage = 4 << 20

// formAuth is form sign-in: the session cookies live in the source's jar
// (RFC 6265, public suffixes from golang.org/x/net/publicsuffix), shared by
// every request of the source, and are renewed when a page shows the
// session has ended.
type formAuth struct {
	a      *auth
	cfg    *config.Form
	jar    http.CookieJar
	client *http.Client
	login  *url.URL
	// headers sets the source's User-Agent and its own headers.
	headers func(http.Header, string)

	mu sync.Mutex
	// gen counts sign-ins: a page fetched under generation g that finds
	// the session ended signs in again only if no one has since g.
	gen int
	// failed is the failed sign-in, held until the next cycle (Reset):
	// every page behind it fails at once, without a request.
	failed error
}

func newFormAuth(a *auth, cl *http.Client, headers func(http.Header, string)) (*formAuth, error) {
	jar, err := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	if err != nil {
		return nil, err
	}
	login, err := url.Parse(a.cfg.Form.LoginURL)
	if err != nil {
		return nil, redact.Error(err)
	}
	hj := hostJar{jar: jar, a: a}
	cl.Jar = hj
	follow := cl.CheckRedirect
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// A 307 or 308 has the form, password and all, posted again
		// where it points: only to auth.hosts, as the form's own action.
		if req.Body != nil && req.Body != http.NoBody && !a.covers(req.URL) {
			return &resentElsewhere{status: req.Response.StatusCode, to: req.URL}
		}
		return follow(req, via)
	}
	return &formAuth{a: a, cfg: &a.cfg.Form, jar: hj, client: cl, login: login, headers: headers}, nil
}

// resentElsewhere is the answer to the login form that would have it
// posted again to a host off auth.hosts: the sign-in ends before it is.
type resentElsewhere struct {
	status int
	to     *url.URL
}

func (e *resentElsewhere) Error() string {
	return fmt.Sprintf("the answer to the login form, %d %s, would post it again to %s, not one of auth.hosts: the password is not sent there",
		e.status, http.StatusText(e.status), e.to.Scheme+"://"+e.to.Host)
}

// hostJar keeps the session to auth.hosts: RFC 6265 cookies ignore ports
// and a domain cookie covers every subdomain, but the session is a
// credential, and credentials go only where auth.hosts says.
type hostJar struct {
	jar http.CookieJar
	a   *auth
}

func (j hostJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if j.a.covers(u) {
		j.jar.SetCookies(u, cookies)
	}
}

func (j hostJar) Cookies(u *url.URL) []*http.Cookie {
	if !j.a.covers(u) {
		return nil
	}
	return j.jar.Cookies(u)
}

func (f *formAuth) fail(step string, err error) error {
	return &SignInError{Source: f.a.source, Method: config.AuthForm, Step: step, Err: redact.Error(err)}
}

// session returns the generation of the current session, signing in first
// when there is none yet.
func (f *formAuth) session(ctx context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return 0, f.failed
	}
	if f.gen == 0 {
		if err := f.signIn(ctx); err != nil {
			return 0, err
		}
	}
	return f.gen, nil
}

// renew signs in again after a page fetched under generation gen found the
// session ended, unless another page already did.
func (f *formAuth) renew(ctx context.Context, gen int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return 0, f.failed
	}
	if f.gen != gen {
		return f.gen, nil
	}
	if err := f.signIn(ctx); err != nil {
		return 0, err
	}
	return f.gen, nil
}

// lost holds the source after a page still found the session ended right
// after a sign-in: signing in once a page would be a storm of them.
func (f *formAuth) lost(gen int, rawURL string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil && f.gen == gen {
		f.failed = f.fail("session lost", fmt.Errorf("signed in, but %s still shows the login page or a refusal: check form.success_* and form.logged_out_element", redact.URLs(rawURL)))
	}
	if f.failed != nil {
		return f.failed
	}
	return nil
}

func (f *formAuth) reset() {
	f.mu.Lock()
	f.failed = nil
	f.mu.Unlock()
}

// signIn loads the login page, fills its form and posts it. Called with mu held.
func (f *formAuth) signIn(ctx context.Context) error {
	err := f.post(ctx)
	if err != nil {
		f.failed = err
		return err
	}
	f.gen++
	return nil
}

func (f *formAuth) post(ctx context.Context) error {
	page, final, status, err := f.get(ctx, http.MethodGet, f.login.String(), nil)
	switch {
	case err != nil:
		return f.fail("login page unreachable", err)
	case status != http.StatusOK:
		return f.fail("login page unreachable", fmt.Errorf("%s answered %d %s", redact.URLs(f.login.String()), status, http.StatusText(status)))
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		return f.fail("login form not found", err)
	}
	form := f.pick(doc)
	if form == nil {
		if f.cfg.Action != "" {
			return f.fail("login form not found", fmt.Errorf("no form on %s has an action containing %q", redact.URLs(final.String()), f.cfg.Action))
		}
		return f.fail("login form not found", fmt.Errorf("no form on %s has a field named %q", redact.URLs(final.String()), f.cfg.PasswordField))
	}
	values := formValues(form)
	for _, name := range []string{f.cfg.UsernameField, f.cfg.PasswordField} {
		if form.Find(fieldSelector(name)).Length() == 0 {
			return f.fail("field not found", fmt.Errorf("the login form has no field named %q", name))
		}
	}
	values.Set(f.cfg.UsernameField, f.a.cfg.Username)
	values.Set(f.cfg.PasswordField, f.a.cfg.Password)
	for k, v := range f.cfg.ExtraFields {
		values.Set(k, v)
	}
	action, _ := form.Attr("action")
	target, err := final.Parse(strings.TrimSpace(action))
	if err != nil {
		return f.fail("login form not found", fmt.Errorf("its action does not parse: %v", err))
	}
	target.Fragment = ""
	if !f.a.covers(target) {
		return f.fail("login form posts elsewhere", fmt.Errorf("its action %s is not on one of auth.hosts: the password is not sent there", redact.URLs(target.Scheme+"://"+target.Host)))
	}
	method, _ := form.Attr("method")
	if !strings.EqualFold(strings.TrimSpace(method), http.MethodPost) {
		// A GET form puts the password in a URL, which servers log.
		return f.fail("login form not found", fmt.Errorf("the login form's method is %q, not post: the password would travel in its URL", method))
	}
	body, landed, status, err := f.get(ctx, http.MethodPost, target.String(), strings.NewReader(values.Encode()))
	var resent *resentElsewhere
	switch {
	case errors.As(err, &resent):
		return f.fail("login form posts elsewhere", resent)
	case err != nil:
		return f.fail("credentials refused", fmt.Errorf("posting the login form: %w", err))
	case status >= 400:
		return f.fail("credentials refused", fmt.Errorf("the login form's answer was %d %s", status, http.StatusText(status)))
	}
	if ok, why := f.succeeded(body, landed); !ok {
		return f.fail("credentials refused", errors.New(why))
	}
	return nil
}

// get makes a sign-in request, redirects followed, and reads its answer.
func (f *formAuth) get(ctx context.Context, method, rawURL string, body io.Reader) ([]byte, *url.URL, int, error) {
	ctx = withBodyLimit(ctx, maxLoginPage)
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	f.headers(req.Header, rawURL)
	res, err := f.client.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxLoginPage))
	if err != nil {
		return nil, nil, 0, err
	}
	return b, res.Request.URL, res.StatusCode, nil
}

// pick is the login form: the one whose action holds form.action, else the
// first holding the password field.
func (f *formAuth) pick(doc *goquery.Document) *goquery.Selection {
	var found *goquery.Selection
	doc.Find("form").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if f.cfg.Action != "" {
			if a, _ := s.Attr("action"); strings.Contains(a, f.cfg.Action) {
				found = s
			}
		} else if s.Find(fieldSelector(f.cfg.PasswordField)).Length() > 0 {
			found = s
		}
		return found == nil
	})
	return found
}

func fieldSelector(name string) string {
	return `[name="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"]`
}

// formValues is what a browser would send of the form's own fields: the
// hidden ones (CSRF tokens) with the rest, the first named submit button,
// checked boxes only.
func formValues(form *goquery.Selection) url.Values {
	v := url.Values{}
	submitted := false
	form.Find("input, select, textarea, button").Each(func(_ int, s *goquery.Selection) {
		name, ok := s.Attr("name")
		if !ok || name == "" {
			return
		}
		if _, disabled := s.Attr("disabled"); disabled {
			return
		}
		val, _ := s.Attr("value")
		switch goquery.NodeName(s) {
		case "textarea":
			v.Add(name, s.Text())
			return
		case "select":
			opt := s.Find("option[selected]").First()
			if opt.Length() == 0 {
				opt = s.Find("option").First()
			}
			if ov, ok := opt.Attr("value"); ok {
				v.Add(name, ov)
			} else if opt.Length() > 0 {
				v.Add(name, strings.TrimSpace(opt.Text()))
			}
			return
		case "button":
			if t, _ := s.Attr("type"); (t == "" || strings.EqualFold(t, "submit")) && !submitted {
				submitted = true
				v.Add(name, val)
			}
			return
		}
		switch t, _ := s.Attr("type"); strings.ToLower(t) {
		case "submit", "image":
			if !submitted {
				submitted = true
				v.Add(name, val)
			}
		case "button", "reset", "file":
		case "checkbox", "radio":
			if _, checked := s.Attr("checked"); checked {
				if val == "" {
					val = "on"
				}
				v.Add(name, val)
			}
		default:
			v.Add(name, val)
		}
	})
	return v
}

// succeeded judges the answer to the post by what form.success_* names,
// else by the login form's absence.
func (f *formAuth) succeeded(body []byte, landed *url.URL) (bool, string) {
	c := f.cfg
	checked := false
	if c.SuccessCookie != "" {
		checked = true
		found := false
		for _, u := range []*url.URL{landed, f.login} {
			for _, ck := range f.jar.Cookies(u) {
				found = found || ck.Name == c.SuccessCookie
			}
		}
		if !found {
			return false, fmt.Sprintf("no cookie %s was set", c.SuccessCookie)
		}
	}
	if c.SuccessURL != "" {
		checked = true
		want, err := f.login.Parse(c.SuccessURL)
		if err != nil || !strings.HasPrefix(landed.String(), want.String()) {
			return false, fmt.Sprintf("the sign-in ended at %s, not at %s", redact.URLs(landed.String()), redact.URLs(c.SuccessURL))
		}
	}
	if c.SuccessElement != "" {
		checked = true
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
		if err != nil || doc.Find(c.SuccessElement).Length() == 0 {
			return false, fmt.Sprintf("the page after signing in has no %s", c.SuccessElement)
		}
	}
	if !checked && f.loginPage(body) {
		return false, "the answer to the login form is the login form again"
	}
	return true, ""
}

// loginPage reports whether an HTML body is what a signed-out visitor
// gets: form.logged_out_element, else a form with the password field.
func (f *formAuth) loginPage(body []byte) bool {
	sel := f.cfg.LoggedOutElement
	if sel == "" {
		// Parsing every page twice would cost: most hold no such name.
		if !bytes.Contains(body, []byte(f.cfg.PasswordField)) {
			return false
		}
		sel = "form " + fieldSelector(f.cfg.PasswordField)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	return err == nil && doc.Find(sel).Length() > 0
}

// signedOut reports whether a page response shows the session has ended:
// 401 or 403, a redirect to the login page, or a page a signed-out visitor
// gets.
func (f *formAuth) signedOut(res *Response) bool {
	switch {
	case res.Err != nil:
		return false
	case res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden:
		return true
	case res.Status >= 300 && res.Status < 400:
		from, err := url.Parse(res.URL)
		if err != nil {
			return false
		}
		to, err := from.Parse(res.Header.Get("Location"))
		return err == nil && f.isLogin(to)
	case res.Status == http.StatusOK:
		return len(res.Body) > 0 && f.loginPage(res.Body)
	}
	return false
}

// isLogin reports whether u is the login page, whatever its query says
// (a return address, usually).
func (f *formAuth) isLogin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, f.login.Scheme) && strings.EqualFold(u.Host, f.login.Host) &&
		strings.TrimSuffix(u.Path, "/") == strings.TrimSuffix(f.login.Path, "/")
}
