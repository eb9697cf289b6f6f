package fetch

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/Azure/go-ntlmssp"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/redact"
)

// SignInError is a source that could not authenticate: the step that
// failed and why, never a secret. It is a temporary error of the source,
// not of the page: pages behind it wait, and their documents stay.
type SignInError struct {
	Source string
	Method string
	// Step names what failed: "login page unreachable", "login form not
	// found", "field not found", "credentials refused", "session lost",
	// "kerberos login", ...
	Step string
	Err  error
}

func (e *SignInError) Error() string {
	return fmt.Sprintf("source %s: %s authentication failed: %s: %v", e.Source, e.Method, e.Step, e.Err)
}

func (e *SignInError) Unwrap() error { return e.Err }

// auth is a source's authentication: its method, the hosts its credentials
// go to, and the state a method keeps (digest challenges, the Kerberos
// client, the form session). Requests to any other host go out as they came.
type auth struct {
	source string
	cfg    *config.Auth
	hosts  config.AuthHosts
	// header and value are what basic and bearer add to each request.
	header, value string
	digest        digestCache
	krb           *krbAuth
	ntlm          http.RoundTripper
	form          *formAuth
	// failed holds the first refusal of the credentials until the next
	// cycle: a password tried once a page could lock the account.
	failed sticky
}

func newAuth(source string, a *config.Auth, own map[string]bool, base http.RoundTripper) (*auth, error) {
	origins := make([]string, 0, len(own))
	for o := range own {
		origins = append(origins, o)
	}
	hosts, err := a.CredentialHosts(origins)
	if err != nil {
		return nil, err
	}
	au := &auth{source: source, cfg: a, hosts: hosts}
	switch a.Method {
	case config.AuthBasic:
		req := &http.Request{Header: http.Header{}}
		req.SetBasicAuth(a.Username, a.Password)
		au.header, au.value = "Authorization", req.Header.Get("Authorization")
	case config.AuthBearer:
		au.header, au.value = a.Header, a.Token
		if http.CanonicalHeaderKey(a.Header) == "Authorization" {
			au.value = "Bearer " + a.Token
		}
	case config.AuthKerberos:
		au.krb = &krbAuth{cfg: a}
	case config.AuthNTLM:
		au.ntlm = ntlmssp.Negotiator{RoundTripper: base}
	}
	return au, nil
}

// covers reports whether the credentials may go to u.
func (a *auth) covers(u *url.URL) bool {
	return a != nil && a.hosts.Covers(u)
}

// describe says which authentication a URL gets, for explain and status:
// the method and the user, never a secret.
func (a *auth) describe(rawURL string) string {
	if a == nil {
		return "none"
	}
	u, err := url.Parse(rawURL)
	if err != nil || !a.covers(u) {
		return "none (the host is not one of auth.hosts: no credentials are sent to it)"
	}
	c := a.cfg
	switch c.Method {
	case config.AuthBearer:
		return "bearer token in the " + http.CanonicalHeaderKey(c.Header) + " header"
	case config.AuthForm:
		return fmt.Sprintf("form sign-in as %s at %s (session cookies)", c.Username, redact.URLs(c.Form.LoginURL))
	case config.AuthKerberos:
		return fmt.Sprintf("kerberos (SPNEGO) as %s@%s", c.Username, c.Kerberos.Realm)
	case config.AuthNTLM:
		user := c.Username
		if c.Domain != "" {
			user = c.Domain + `\` + user
		}
		return "ntlm as " + user
	}
	return c.Method + " as " + c.Username
}

// authTransport adds the source's credentials to the requests for its
// auth hosts. It decides per request, so a redirect to another host never
// carries them: every hop passes through here again.
type authTransport struct {
	base http.RoundTripper
	a    *auth
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := t.a
	if !a.covers(req.URL) {
		return t.base.RoundTrip(req)
	}
	switch a.cfg.Method {
	case config.AuthBasic, config.AuthBearer:
		req = req.Clone(req.Context())
		req.Header.Set(a.header, a.value)
		return t.base.RoundTrip(req)
	case config.AuthDigest:
		return a.digestRoundTrip(t.base, req)
	case config.AuthKerberos:
		req = req.Clone(req.Context())
		if err := a.krb.setHeader(req); err != nil {
			return nil, &SignInError{Source: a.source, Method: a.cfg.Method, Step: "kerberos login", Err: redact.Error(err)}
		}
		return t.base.RoundTrip(req)
	case config.AuthNTLM:
		req = req.Clone(req.Context())
		user := a.cfg.Username
		if a.cfg.Domain != "" {
			user = a.cfg.Domain + `\` + user
		}
		// The negotiator turns these into the NTLM handshake and never
		// sends them as basic auth (AllowBasicAuth is false).
		req.SetBasicAuth(user, a.cfg.Password)
		return a.ntlm.RoundTrip(req)
	}
	return t.base.RoundTrip(req)
}

// refused reports a response to a request that carried the credentials and
// was refused them: a temporary error of the source.
func (a *auth) refused(u *url.URL, status int) error {
	if a == nil || status != http.StatusUnauthorized || !a.covers(u) {
		return nil
	}
	err := &SignInError{Source: a.source, Method: a.cfg.Method, Step: "credentials refused",
		Err: fmt.Errorf("%s answered 401 Unauthorized to a request carrying them", u.Scheme+"://"+u.Host)}
	a.failed.set(err)
	return err
}

// held is the refusal that holds requests to u back, or nil.
func (a *auth) held(u *url.URL) error {
	if a == nil || !a.covers(u) {
		return nil
	}
	return a.failed.get()
}

// noHTTP2 is for NTLM: it authenticates a connection, and HTTP/2
// multiplexes requests of any kind onto one.
func noHTTP2(tr *http.Transport) {
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
}

// sticky holds a source's failed sign-in until the next cycle, so that the
// pages behind it fail at once, without a request each.
type sticky struct {
	mu  sync.Mutex
	err error
}

func (s *sticky) get() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *sticky) set(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}
