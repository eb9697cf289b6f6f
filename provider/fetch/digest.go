package fetch

import (
	"crypto/md5" //nolint:gosec // RFC 7616 names MD5; servers still ask for it
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
)

// digestCache keeps the last Digest challenge of each origin, so a page
// after the first is sent with its answer at once instead of costing a
// 401 first (RFC 7616 3.3: the nonce may be reused, with a growing count).
type digestCache struct {
	mu     sync.Mutex
	byHost map[string]*digestChallenge
}

type digestChallenge struct {
	realm, nonce, opaque, algorithm, qop string
	nc                                   uint32
}

func (c *digestCache) get(origin string) *digestChallenge {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byHost[origin]
}

func (c *digestCache) put(origin string, ch *digestChallenge) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byHost == nil {
		c.byHost = map[string]*digestChallenge{}
	}
	c.byHost[origin] = ch
}

// digestRoundTrip sends req with the answer to the origin's last
// challenge, if any, and once more with the answer to a new challenge when
// the server sends one (first contact, or a stale nonce). The requests the
// crawler makes have no body, so resending is safe.
func (a *auth) digestRoundTrip(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	if ch := a.digest.get(origin); ch != nil {
		r := req.Clone(req.Context())
		a.digestAuthorize(r, ch)
		res, err := base.RoundTrip(r)
		if err != nil || res.StatusCode != http.StatusUnauthorized {
			return res, err
		}
		next := parseDigest(res.Header.Values("WWW-Authenticate"))
		if next == nil || !strings.EqualFold(next.stale, "true") && next.nonce == ch.nonce {
			return res, nil // refused for good: the caller sees the 401
		}
		drain(res)
		a.digest.put(origin, &next.digestChallenge)
		r = req.Clone(req.Context())
		a.digestAuthorize(r, &next.digestChallenge)
		return base.RoundTrip(r)
	}
	res, err := base.RoundTrip(req)
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		return res, err
	}
	ch := parseDigest(res.Header.Values("WWW-Authenticate"))
	if ch == nil {
		return res, nil
	}
	drain(res)
	a.digest.put(origin, &ch.digestChallenge)
	r := req.Clone(req.Context())
	a.digestAuthorize(r, &ch.digestChallenge)
	return base.RoundTrip(r)
}

func drain(res *http.Response) {
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
}

// digestAuthorize sets the Authorization header answering ch (RFC 7616 3.4).
func (a *auth) digestAuthorize(req *http.Request, ch *digestChallenge) {
	a.digest.mu.Lock()
	ch.nc++
	nc := fmt.Sprintf("%08x", ch.nc)
	a.digest.mu.Unlock()
	var b [12]byte
	rand.Read(b[:])
	cnonce := hex.EncodeToString(b[:])
	uri := req.URL.RequestURI()
	qop := ""
	if ch.qop != "" {
		qop = "auth"
	}
	response := digestResponse(ch, a.cfg.Username, a.cfg.Password, req.Method, uri, nc, cnonce)
	var sb strings.Builder
	fmt.Fprintf(&sb, `Digest username=%q, realm=%q, nonce=%q, uri=%q, response=%q`,
		a.cfg.Username, ch.realm, ch.nonce, uri, response)
	if ch.algorithm != "" {
		fmt.Fprintf(&sb, ", algorithm=%s", ch.algorithm)
	}
	if ch.opaque != "" {
		fmt.Fprintf(&sb, ", opaque=%q", ch.opaque)
	}
	if qop != "" {
		fmt.Fprintf(&sb, ", qop=%s, nc=%s, cnonce=%q", qop, nc, cnonce)
	}
	req.Header.Set("Authorization", sb.String())
}

// digestResponse is the response of RFC 7616 3.4.1 to ch.
func digestResponse(ch *digestChallenge, user, pass, method, uri, nc, cnonce string) string {
	newHash := md5.New
	alg := strings.ToUpper(ch.algorithm)
	if strings.HasPrefix(alg, "SHA-256") {
		newHash = sha256.New
	}
	h := func(s string) string { return hexHash(newHash, s) }
	ha1 := h(user + ":" + ch.realm + ":" + pass)
	if strings.HasSuffix(alg, "-SESS") {
		ha1 = h(ha1 + ":" + ch.nonce + ":" + cnonce)
	}
	ha2 := h(method + ":" + uri)
	if ch.qop != "" {
		return h(ha1 + ":" + ch.nonce + ":" + nc + ":" + cnonce + ":auth:" + ha2)
	}
	return h(ha1 + ":" + ch.nonce + ":" + ha2)
}

func hexHash(newHash func() hash.Hash, s string) string {
	h := newHash()
	io.WriteString(h, s)
	return hex.EncodeToString(h.Sum(nil))
}

type parsedDigest struct {
	digestChallenge
	stale string
}

// parseDigest reads the first Digest challenge of WWW-Authenticate headers
// that offers qop=auth or no qop, with an algorithm this client computes.
func parseDigest(headers []string) *parsedDigest {
	for _, h := range headers {
		for _, ch := range splitChallenges(h) {
			scheme, params, _ := strings.Cut(ch, " ")
			if !strings.EqualFold(scheme, "Digest") {
				continue
			}
			p := parseParams(params)
			d := &parsedDigest{digestChallenge: digestChallenge{realm: p["realm"], nonce: p["nonce"],
				opaque: p["opaque"], algorithm: p["algorithm"]}, stale: p["stale"]}
			switch strings.ToUpper(d.algorithm) {
			case "", "MD5", "MD5-SESS", "SHA-256", "SHA-256-SESS":
			default:
				continue
			}
			if q := p["qop"]; q != "" {
				ok := false
				for _, v := range strings.Split(q, ",") {
					ok = ok || strings.TrimSpace(v) == "auth"
				}
				if !ok {
					continue
				}
				d.qop = "auth"
			}
			if d.nonce != "" {
				return d
			}
		}
	}
	return nil
}

// splitChallenges splits a WWW-Authenticate value holding several
// challenges ("Digest realm=..., Basic realm=...") at the commas that start
// a new scheme, minding quoted strings.
func splitChallenges(h string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			rest := strings.TrimLeft(h[i+1:], " ")
			// A new challenge is a token followed by a space, not name=value.
			tok := rest
			if j := strings.IndexAny(rest, " =,"); j >= 0 {
				tok = rest[:j]
				if rest[j] == ' ' && tok != "" {
					out = append(out, strings.TrimSpace(h[start:i]))
					start = i + 1
				}
			}
		}
	}
	return append(out, strings.TrimSpace(h[start:]))
}

// parseParams reads auth-params: name=token or name="quoted string".
func parseParams(s string) map[string]string {
	p := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimLeft(s, " ,") {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		name := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " ")
		var val string
		if strings.HasPrefix(s, `"`) {
			var sb strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				sb.WriteByte(s[i])
			}
			val, s = sb.String(), s[min(i+1, len(s)):]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			val, s = strings.TrimSpace(s[:end]), s[end:]
		}
		p[name] = val
	}
	return p
}
