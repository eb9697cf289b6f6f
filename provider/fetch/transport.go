package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/redact"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// newTransport builds the HTTP transport of one source. The address check
// sits in the dialer's Control hook, so it judges the address actually
// connected to, after DNS: a public name resolving to an internal address
// is refused too, and a DNS answer that changes between checks cannot steer
// the crawler elsewhere. Behind a proxy the only address dialed is the
// proxy's, so address rules cannot apply (as the IBM seed warns).
func newTransport(cfg *config.Config, check func(netip.Addr) error) (*http.Transport, error) {
	f := cfg.Fetch
	dialer := &net.Dialer{Timeout: f.ConnectTimeout.D(), KeepAlive: 30 * time.Second}
	if f.Proxy == "" {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return err
			}
			return check(ip)
		}
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: f.InsecureSkipVerify} //nolint:gosec // opt-in, warned about at start
	var err error
	if tlsCfg.RootCAs, err = f.RootCAs(); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   f.ConnectTimeout.D(),
		ResponseHeaderTimeout: f.ResponseHeaderTimeout.D(),
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		// decodingTransport decodes every body, with its limit.
		DisableCompression: true,
	}
	if f.Proxy != "" {
		pu, err := url.Parse(f.Proxy)
		if err != nil {
			// A parse error quotes the URL, credentials and all.
			return nil, redact.Error(fmt.Errorf("fetch.proxy: %w", err))
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	return tr, nil
}

// Classify turns a failed fetch into a reason code and whether it is
// temporary (worth retrying) in Exalead's sense.
func Classify(err error) (reason string, temporary bool) {
	var dnsErr *net.DNSError
	var addrErr *AddressError
	var certErr *tls.CertificateVerificationError
	var encErr *encodingError
	var signIn *SignInError
	switch {
	case errors.As(err, &signIn):
		// The source cannot authenticate: nothing is known about the URL yet.
		return "auth_failed", true
	case errors.As(err, &addrErr):
		return addrErr.Reason, false
	case errors.As(err, &encErr):
		// A body not in the coding it claims stays so until someone acts.
		return "content_encoding", false
	case errors.As(err, &certErr):
		// An untrusted or mismatched certificate stays so until someone acts.
		return "tls_error", false
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		return "timeout", true
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "dns_not_found", false
		}
		return "dns_error", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused", true
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset", true
	case strings.Contains(err.Error(), "failed to parse Location header"):
		// net/http's client rejects a 3xx whose Location does not parse
		// before redirect handling sees it, with only this message to
		// tell; Exalead: a redirect to a malformed URL, permanent.
		return "redirect_malformed", false
	}
	return "connection_error", false
}

// AddressError is the dialer's refusal of an address the source's rules
// forbid: no request reached the host.
type AddressError struct {
	IP     netip.Addr
	Reason string
	Rule   string
}

func (e *AddressError) Error() string {
	if e.Rule != "" {
		return fmt.Sprintf("address %s refused (%s, %s)", e.IP, e.Reason, e.Rule)
	}
	return fmt.Sprintf("address %s refused (%s)", e.IP, e.Reason)
}

// locationTransport resolves a redirect's Location as browsers do (the
// URL Standard, relative to the URL requested: urlnorm.Resolve) and hands
// it on absolute. net/http's client parses a Location with net/url before
// any redirect policy sees it, and fails the request on what browsers
// read every day (a backslash, a tab, "http:page.html", a colon in a
// relative path); resolved, such a Location reaches the crawler, whose
// redirect, robots.txt and sitemap handling go on from it. A Location the
// standard refuses too is left as it came, to fail as malformed.
type locationTransport struct{ base http.RoundTripper }

func (t locationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil || res.StatusCode < 300 || res.StatusCode >= 400 {
		return res, err
	}
	if loc := res.Header.Get("Location"); loc != "" {
		if abs, err := urlnorm.Resolve(req.URL.String(), loc); err == nil {
			res.Header.Set("Location", abs)
		}
	}
	return res, nil
}
