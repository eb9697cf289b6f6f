package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/http/httpguts"
)

// Authentication methods of a source's auth block.
const (
	AuthBasic    = "basic"
	AuthDigest   = "digest"
	AuthBearer   = "bearer"
	AuthForm     = "form"
	AuthKerberos = "kerberos"
	AuthNTLM     = "ntlm"
)

// AuthMethods lists the methods an auth block may name, in the order the
// documentation gives them.
var AuthMethods = []string{AuthBasic, AuthDigest, AuthBearer, AuthForm, AuthKerberos, AuthNTLM}

// DefaultLogoutPatterns are the URL substrings form sign-in keeps the crawl
// away from: following a logout link would end the session it depends on.
var DefaultLogoutPatterns = []string{"logout", "logoff", "log-out", "log_out", "signout", "sign-out", "sign_out"}

// Auth is how a source proves who it is to its hosts: one method, its
// credentials sent only to Hosts (by default the start URLs' hosts, and a
// form's login page host), never to another host.
//
// Every secret may be written in three ways: as is (password), named by an
// environment variable (password_env) or read from a file (password_file,
// relative to the config file, trailing newline dropped). After Load the
// secret is in Password, Token or Keytab whichever form was used.
type Auth struct {
	// Method is basic (the default, so an auth block of only username and
	// password means what it always did), digest, bearer, form, kerberos or
	// ntlm.
	Method string `yaml:"method"`
	// Hosts are host names (any scheme and port) or origins
	// (scheme://host[:port]) the credentials go to.
	Hosts    []string `yaml:"hosts"`
	Username string   `yaml:"username"`

	Password     string `yaml:"password"`
	PasswordEnv  string `yaml:"password_env"`
	PasswordFile string `yaml:"password_file"`

	// Token is the bearer method's secret, sent in Header: Authorization
	// (the default) as "Bearer TOKEN", any other header as it is.
	Token     string `yaml:"token"`
	TokenEnv  string `yaml:"token_env"`
	TokenFile string `yaml:"token_file"`
	Header    string `yaml:"header"`

	// Domain is the NTLM domain (or workgroup) of Username.
	Domain string `yaml:"domain"`

	Form     Form     `yaml:"form"`
	Kerberos Kerberos `yaml:"kerberos"`

	// Keytab holds the Kerberos keytab's bytes, read from kerberos.keytab_file
	// or decoded from the base64 of kerberos.keytab_env.
	Keytab []byte `yaml:"-"`
}

// Form is form sign-in: the crawler loads LoginURL, fills the login form
// (found by Action, else by holding PasswordField) with the username, the
// password, ExtraFields and the form's own hidden inputs (CSRF tokens), posts
// it, and keeps the session cookies in the source's cookie jar.
type Form struct {
	LoginURL string `yaml:"login_url"`
	// Action picks the form whose action attribute contains it, when the
	// login page holds several.
	Action        string            `yaml:"action"`
	UsernameField string            `yaml:"username_field"`
	PasswordField string            `yaml:"password_field"`
	ExtraFields   map[string]string `yaml:"extra_fields"`
	// How a sign-in shows it worked; with none set, the answer to the post
	// must no longer hold the login form.
	SuccessCookie  string `yaml:"success_cookie"`
	SuccessURL     string `yaml:"success_url"`
	SuccessElement string `yaml:"success_element"`
	// LoggedOutElement is a CSS selector found only on a page served to a
	// signed-out visitor; by default, a page holding the login form's
	// password field is one.
	LoggedOutElement string `yaml:"logged_out_element"`
	// LogoutPatterns are URL substrings (case-insensitive) never fetched.
	LogoutPatterns []string `yaml:"logout_patterns"`
}

// Kerberos is SPNEGO (HTTP Negotiate) with Username@Realm's password or a keytab.
type Kerberos struct {
	Realm string `yaml:"realm"`
	// Krb5Conf names the krb5.conf giving the realm's KDCs.
	Krb5Conf   string `yaml:"krb5_conf"`
	KeytabFile string `yaml:"keytab_file"`
	// KeytabEnv names an environment variable holding the keytab in base64.
	KeytabEnv string `yaml:"keytab_env"`
	// SPN is the service principal asked for; by default HTTP/<host>.
	SPN string `yaml:"spn"`
	// DisablePAFXFAST leaves out the PA-FX-FAST padata, for KDCs (Active
	// Directory) that refuse it.
	DisablePAFXFAST bool `yaml:"disable_pa_fx_fast"`
}

// authKeys lists, per method, the auth keys it reads; any other key written
// under auth is an error, so a token never sits unused beside a password.
var authKeys = map[string][]string{
	AuthBasic:    {"method", "hosts", "username", "password", "password_env", "password_file"},
	AuthDigest:   {"method", "hosts", "username", "password", "password_env", "password_file"},
	AuthNTLM:     {"method", "hosts", "username", "password", "password_env", "password_file", "domain"},
	AuthBearer:   {"method", "hosts", "token", "token_env", "token_file", "header"},
	AuthForm:     {"method", "hosts", "username", "password", "password_env", "password_file", "form"},
	AuthKerberos: {"method", "hosts", "username", "password", "password_env", "password_file", "kerberos"},
}

func (a *Auth) setDefaults(p string, written func(string) bool, dir string) {
	defaultAt(written, p+".method", &a.Method, AuthBasic)
	if a.Method == AuthBearer {
		defaultAt(written, p+".header", &a.Header, "Authorization")
	}
	a.PasswordFile = resolve(dir, a.PasswordFile)
	a.TokenFile = resolve(dir, a.TokenFile)
	if a.Method == AuthForm {
		f := &a.Form
		defaultAt(written, p+".form.username_field", &f.UsernameField, "username")
		defaultAt(written, p+".form.password_field", &f.PasswordField, "password")
		if f.LogoutPatterns == nil {
			f.LogoutPatterns = slices.Clone(DefaultLogoutPatterns)
		}
	}
	if a.Method == AuthKerberos {
		defaultAt(written, p+".kerberos.krb5_conf", &a.Kerberos.Krb5Conf, "/etc/krb5.conf")
		a.Kerberos.Krb5Conf = resolve(dir, a.Kerberos.Krb5Conf)
		a.Kerberos.KeytabFile = resolve(dir, a.Kerberos.KeytabFile)
	}
}

// auth checks a source's auth block and reads its secrets from the
// environment or their files. No message quotes a secret.
func (k *checker) auth(p string, s *Source) {
	a := s.Auth
	if !slices.Contains(AuthMethods, a.Method) {
		k.errorf(p+".method", "%q is not one of %s", a.Method, strings.Join(AuthMethods, ", "))
		return
	}
	allowed := authKeys[a.Method]
	for _, key := range []string{"hosts", "username", "password", "password_env", "password_file",
		"token", "token_env", "token_file", "header", "domain", "form", "kerberos"} {
		if k.has(p+"."+key) && !slices.Contains(allowed, key) {
			k.errorf(p+"."+key, "is not used by method %s", a.Method)
		}
	}
	for i, h := range a.Hosts {
		if _, err := ParseAuthHost(h); err != nil {
			k.errorf(indexPath(p+".hosts", i), "%v", err)
		}
	}
	if a.Method != AuthBearer {
		switch {
		case !k.has(p + ".username"):
			k.errorf(p+".username", "is required with auth")
		case !k.nonEmpty(p+".username", a.Username):
		case a.Method == AuthBasic && strings.Contains(a.Username, ":"):
			k.errorf(p+".username", "must not contain a colon (basic auth separates it from the password with one)")
		}
	}
	switch a.Method {
	case AuthBasic, AuthDigest, AuthNTLM, AuthForm:
		k.secret(p, "password", &a.Password, a.PasswordEnv, a.PasswordFile, true)
	case AuthBearer:
		k.secret(p, "token", &a.Token, a.TokenEnv, a.TokenFile, true)
		switch {
		case !httpguts.ValidHeaderFieldName(a.Header):
			k.errorf(p+".header", "%q is not a valid HTTP header name", a.Header)
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, a.Header) }):
			k.errorf(p+".header", "%s is set by the HTTP client and cannot carry a token", a.Header)
		}
		if a.Token != "" && !httpguts.ValidHeaderFieldValue(a.Token) {
			k.errorf(p+".token", "holds a line break or another control character")
		}
	case AuthKerberos:
		k.kerberos(p, a)
	}
	if a.Method == AuthForm {
		k.form(p+".form", s)
	}
}

// secret resolves one secret from its three forms: exactly one must be
// written (when required), and an environment variable or file that gives
// nothing is an error naming the key, the variable or the file.
func (k *checker) secret(p, key string, v *string, env, file string, required bool) {
	forms := 0
	for _, f := range []string{key, key + "_env", key + "_file"} {
		if k.has(p + "." + f) {
			forms++
		}
	}
	switch {
	case forms > 1:
		k.errorf(p+"."+key, "give one of %s, %s_env and %s_file", key, key, key)
		return
	case forms == 0:
		if required {
			k.errorf(p+"."+key, "is required (or %s_env, or %s_file)", key, key)
		}
		return
	}
	switch {
	case k.has(p + "." + key + "_env"):
		k.fromEnv(p+"."+key+"_env", v, env)
	case k.has(p + "." + key + "_file"):
		if !k.nonEmpty(p+"."+key+"_file", file) {
			return
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			k.errorf(p+"."+key+"_file", "cannot read %s: %s", file, pathErr(err))
			return
		}
		// Editors and `echo secret > file` end the file with a newline.
		val := strings.TrimRight(string(raw), "\r\n")
		if val == "" {
			k.errorf(p+"."+key+"_file", "%s is empty", file)
			return
		}
		*v = val
	default:
		if *v == "" {
			k.errorf(p+"."+key, "must not be empty")
		}
	}
}

// fromEnv sets *v to the environment variable the key at path names; one
// not set or empty is an error there.
func (k *checker) fromEnv(path string, v *string, name string) {
	if !k.nonEmpty(path, name) {
		return
	}
	val, ok := os.LookupEnv(name)
	switch {
	case !ok:
		k.errorf(path, "environment variable %s is not set", name)
	case val == "":
		k.errorf(path, "environment variable %s is empty", name)
	default:
		*v = val
	}
}

func (k *checker) kerberos(p string, a *Auth) {
	kp := p + ".kerberos"
	kr := &a.Kerberos
	k.nonEmpty(kp+".realm", kr.Realm)
	if k.has(kp+".keytab_file") && k.has(kp+".keytab_env") {
		k.errorf(kp+".keytab_file", "give one of keytab_file and keytab_env")
		return
	}
	hasPassword := k.has(p+".password") || k.has(p+".password_env") || k.has(p+".password_file")
	hasKeytab := k.has(kp+".keytab_file") || k.has(kp+".keytab_env")
	switch {
	case hasPassword && hasKeytab:
		k.errorf(kp, "give a password or a keytab, not both")
	case hasPassword:
		k.secret(p, "password", &a.Password, a.PasswordEnv, a.PasswordFile, true)
	case k.has(kp + ".keytab_file"):
		if raw, err := os.ReadFile(kr.KeytabFile); err != nil {
			k.errorf(kp+".keytab_file", "cannot read %s: %s", kr.KeytabFile, pathErr(err))
		} else {
			a.Keytab = raw
		}
	case k.has(kp + ".keytab_env"):
		val, ok := os.LookupEnv(kr.KeytabEnv)
		if !ok || val == "" {
			k.errorf(kp+".keytab_env", "environment variable %s is not set or empty", kr.KeytabEnv)
			return
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
		if err != nil {
			// The decoder's message quotes no input, but its offset is enough.
			k.errorf(kp+".keytab_env", "environment variable %s is not base64 (a keytab, base64-encoded)", kr.KeytabEnv)
			return
		}
		a.Keytab = raw
	default:
		k.errorf(kp, "needs a password (password, password_env, password_file) or a keytab (keytab_file, keytab_env)")
	}
	k.readable(kp+".krb5_conf", kr.Krb5Conf)
}

func (k *checker) form(fp string, s *Source) {
	f := &s.Auth.Form
	if !k.has(fp + ".login_url") {
		k.errorf(fp+".login_url", "is required with method form")
	} else {
		k.url(fp+".login_url", f.LoginURL, []string{"http", "https"})
	}
	k.nonEmpty(fp+".username_field", f.UsernameField)
	k.nonEmpty(fp+".password_field", f.PasswordField)
	for _, name := range slices.Sorted(mapsKeys(f.ExtraFields)) {
		if name == f.UsernameField || name == f.PasswordField {
			k.errorf(fp+".extra_fields."+name, "is the username or password field")
		}
	}
	if f.SuccessURL != "" {
		if u, err := url.Parse(f.SuccessURL); err != nil || u.User != nil {
			k.errorf(fp+".success_url", "is not a URL without credentials")
		}
	}
	for _, sel := range []struct{ key, v string }{{"success_element", f.SuccessElement}, {"logged_out_element", f.LoggedOutElement}} {
		if sel.v != "" {
			if err := validSelector(sel.v); err != nil {
				k.errorf(fp+"."+sel.key, "is not a CSS selector: %v", err)
			}
		}
	}
	k.entries(fp+".logout_patterns", f.LogoutPatterns)
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for key := range m {
			if !yield(key) {
				return
			}
		}
	}
}

// AuthHost is one entry of auth.hosts: a host name matching any scheme and
// port, or an origin matching exactly.
type AuthHost struct {
	// Origin is scheme://host:port (the port always written) or "".
	Origin string
	// Host is the lower-case host name when Origin is "".
	Host string
}

// AuthHosts is where a source's credentials may go.
type AuthHosts []AuthHost

// CredentialHosts is where a's credentials may go: auth.hosts, or when it
// is left out the origins of startURLs and, for form, of the login page.
func (a *Auth) CredentialHosts(startURLs []string) (AuthHosts, error) {
	var hs AuthHosts
	for _, h := range a.Hosts {
		ah, err := ParseAuthHost(h)
		if err != nil {
			return nil, err
		}
		hs = append(hs, ah)
	}
	if len(hs) > 0 {
		return hs, nil
	}
	origins := slices.Clone(startURLs)
	if a.Method == AuthForm {
		// The password goes to the login form; by default its host is one of the source's.
		origins = append(origins, a.Form.LoginURL)
	}
	for _, o := range origins {
		if ah, err := ParseAuthHost(originOf(o)); err == nil {
			hs = append(hs, ah)
		}
	}
	return hs, nil
}

// originOf is scheme://host[:port] of a URL.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Covers reports whether the credentials may go to u.
func (hs AuthHosts) Covers(u *url.URL) bool {
	if u == nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	origin := u.Scheme + "://" + host + ":" + port
	for _, h := range hs {
		if h.Origin == origin || h.Host != "" && h.Host == host {
			return true
		}
	}
	return false
}

// reusableSecret names what a method sends that anyone reading the
// traffic could use again: basic's password, the bearer token, the form's
// password and the session it opens. Digest, NTLM and Kerberos send an
// answer to one challenge (a nonce, a server challenge, a ticket with its
// time-stamped authenticator), not the secret: "" for them.
func reusableSecret(method string) string {
	switch method {
	case AuthBasic:
		return "the basic auth password"
	case AuthBearer:
		return "the bearer token"
	case AuthForm:
		return "the form sign-in's password and session cookies"
	}
	return ""
}

// PlainHTTPCredentials warns about source i when its reusable secret
// would go over plain http: to a start URL or login page on http that the
// credentials cover, to an http:// origin of auth.hosts, or to a host name
// of auth.hosts (any scheme) while the source crawls http. The warning is
// placed at the first such key and names every such place; nil when none.
func (c *Config) PlainHTTPCredentials(i int) *Error {
	s := &c.Sources[i]
	if s.Auth == nil || reusableSecret(s.Auth.Method) == "" {
		return nil
	}
	a := s.Auth
	hosts, err := a.CredentialHosts(s.StartURLs)
	if err != nil {
		return nil // validation reports the entry
	}
	p := SourcePath(i)
	var keys, places []string
	add := func(key, place string) {
		keys = append(keys, key)
		if !slices.Contains(places, place) {
			places = append(places, place)
		}
	}
	for j, raw := range s.StartURLs {
		if u, err := url.Parse(raw); err == nil && u.Scheme == "http" && hosts.Covers(u) {
			add(indexPath(p+".start_urls", j), originOf(raw))
		}
	}
	if a.Method == AuthForm {
		if u, err := url.Parse(a.Form.LoginURL); err == nil && u.Scheme == "http" {
			add(p+".auth.form.login_url", originOf(a.Form.LoginURL))
		}
	}
	for j, h := range a.Hosts {
		ah, _ := ParseAuthHost(h)
		switch {
		case strings.HasPrefix(ah.Origin, "http://"):
			add(indexPath(p+".auth.hosts", j), h)
		case ah.Host != "" && slices.Contains(s.Schemes, "http"):
			add(indexPath(p+".auth.hosts", j), "any http URL on "+ah.Host+" (a host name in auth.hosts takes any scheme)")
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if len(places) > 5 {
		places = append(places[:5], fmt.Sprintf("%d more", len(places)-5))
	}
	return c.Errorf(keys[0], "%s would go over plain http, readable and reusable by anyone on the network path, to %s; use https URLs (and https:// origins in auth.hosts)",
		reusableSecret(a.Method), strings.Join(places, ", "))
}

// ParseAuthHost reads an auth.hosts entry.
func ParseAuthHost(h string) (AuthHost, error) {
	if strings.TrimSpace(h) == "" {
		return AuthHost{}, fmt.Errorf("must not be empty")
	}
	if !strings.Contains(h, "://") {
		if strings.ContainsAny(h, "/:@?# ") {
			return AuthHost{}, fmt.Errorf("%q is neither a host name nor scheme://host[:port]", h)
		}
		return AuthHost{Host: strings.ToLower(h)}, nil
	}
	u, err := url.Parse(h)
	if err != nil || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return AuthHost{}, fmt.Errorf("%q is neither a host name nor scheme://host[:port]", redactedHost(h))
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return AuthHost{Origin: u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port}, nil
}

// redactedHost keeps user information out of an error about a hosts entry.
func redactedHost(h string) string {
	if i := strings.Index(h, "@"); i >= 0 {
		if j := strings.Index(h, "://"); j >= 0 && j < i {
			return h[:j+3] + "xxxxx" + h[i:]
		}
	}
	return h
}

func validSelector(sel string) error {
	_, err := cascadia.Compile(sel)
	return err
}
