package config

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// SourceByName returns the source called name, or nil.
func (c *Config) SourceByName(name string) *Source {
	for i := range c.Sources {
		if c.Sources[i].Name == name {
			return &c.Sources[i]
		}
	}
	return nil
}

// Path is the source's key path, "sources[i]"; see SourcePath.
func (s *Source) Path() string { return SourcePath(s.Index) }

// fingerprintSkip lists the source keys that change how often or how gently
// a source is crawled, or with which credentials, but neither which URLs
// belong to it nor what their documents hold. Changing them must not make
// every known URL be re-judged (issue 6).
var fingerprintSkip = []string{
	"discovery_interval", "max_age", "sitemap_limits", "politeness",
	"orphans", "max_temporary_errors", "auth", "headers", "budget", "hold_deletes",
	// Rendering changes no URL's place in the crawl space: it has its own
	// fingerprint (RenderFingerprint), whose change reads pages again.
	"render",
}

// RenderFingerprint is a stable hash of how a source renders its pages: its
// render block and every crawl rule that has one (the rule's match decides
// which URLs it renders). It is "" when the source renders nothing. It is
// kept apart from Fingerprint because a change re-judges no URL: it asks
// for the pages to be read again, rendered or not, since a page whose
// shell never changes would otherwise keep the document it had.
func RenderFingerprint(s *Source) string {
	renders := s.Render.Enabled != nil && *s.Render.Enabled
	h := sha256.New()
	h.Write([]byte("crawlspace render fingerprint 1\n"))
	canon(h, "render", reflect.ValueOf(s.Render), false, nil)
	for i := range s.CrawlRules {
		cr := &s.CrawlRules[i]
		if cr.Render == nil {
			continue
		}
		renders = renders || cr.Render.Enabled != nil && *cr.Render.Enabled
		canon(h, indexPath("crawl_rules", i), reflect.ValueOf(*cr), false, nil)
	}
	if !renders {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Fingerprint is a stable hash of a source's effective (defaulted) config,
// stored with the crawl state so that a change to the source's crawl space
// or document shaping is noticed on the next start and every known URL is
// re-judged. It is 32 hex digits.
//
// It covers every key of the source after defaults (name, start_urls,
// discovery, sitemaps, use_sitemaps, feeds, stay_on_start_hosts,
// stay_in_start_dir, schemes, max_link_depth, max_path_depth, max_url_length,
// follow_query_strings, honored_query_params, include, exclude,
// ignored_extensions, mime_types, rules, crawl_rules, kill_exact,
// kill_patterns, reject_list (its path; its lines are reloaded live),
// robots, extraction) except discovery_interval, max_age, sitemap_limits,
// politeness, orphans, max_temporary_errors, render, auth (but for a form sign-in's
// login_url and logout_patterns, which keep URLs out), headers and budget; plus these
// global keys, which shape every source's crawl space: the product token of
// user_agent (the first word before any "/": robots.txt groups match it,
// so a version bump changes nothing), allow_private_networks, whether
// fetch.proxy is set (behind a proxy no address is judged),
// always_ignored_extensions, fetch.max_body_bytes and
// fetch.max_links_per_page. Keys at their zero value are left out of the
// hash, so a future key whose zero is its default does not change existing
// fingerprints. A Source built in Go rather than by Load or Parse has no
// global keys to add and is hashed on its own keys.
func Fingerprint(s *Source) string {
	h := sha256.New()
	h.Write([]byte("crawlspace source fingerprint 1\n"))
	canon(h, "", reflect.ValueOf(s).Elem(), false, fingerprintSkip)
	if a := s.Auth; a != nil && a.Method == AuthForm {
		// Form sign-in keeps its login page and logout links out of the
		// crawl space: they shape which URLs belong, as rules do.
		canon(h, "auth.form.login_url", reflect.ValueOf(a.Form.LoginURL), false, nil)
		canon(h, "auth.form.logout_patterns", reflect.ValueOf(a.Form.LogoutPatterns), false, nil)
	}
	if c := s.cfg; c != nil {
		token := ""
		if f := strings.Fields(c.UserAgent); len(f) > 0 {
			token, _, _ = strings.Cut(f[0], "/")
		}
		canon(h, "user_agent.product_token", reflect.ValueOf(token), false, nil)
		canon(h, "allow_private_networks", reflect.ValueOf(c.AllowPrivateNetworks), false, nil)
		canon(h, "fetch.proxy.set", reflect.ValueOf(c.Fetch.Proxy != ""), false, nil)
		canon(h, "always_ignored_extensions", reflect.ValueOf(c.AlwaysIgnoredExtensions), false, nil)
		canon(h, "fetch.max_body_bytes", reflect.ValueOf(c.Fetch.MaxBodyBytes), false, nil)
		canon(h, "fetch.max_links_per_page", reflect.ValueOf(c.Fetch.MaxLinksPerPage), false, nil)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// canon writes one "path=value" line per non-zero scalar under v, in yaml
// key order with map keys sorted. set is true for the target of a non-nil
// pointer, whose zero value ("index: false") differs from unset.
func canon(h hash.Hash, path string, v reflect.Value, set bool, skip []string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			canon(h, path, v.Elem(), true, nil)
		}
	case reflect.Struct:
		f := fieldsOf(v.Type())
		for _, name := range f.names {
			if slices.Contains(skip, name) {
				continue
			}
			canon(h, joinPath(path, name), v.FieldByIndex(f.index[name]), false, nil)
		}
	case reflect.Slice:
		for i := range v.Len() {
			canon(h, indexPath(path, i), v.Index(i), true, nil)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			canon(h, path+"."+strconv.Quote(k.String()), v.MapIndex(k), true, nil)
		}
	default:
		if !set && v.IsZero() {
			return
		}
		var val string
		switch v.Kind() {
		case reflect.String:
			val = strconv.Quote(v.String())
		case reflect.Bool:
			val = strconv.FormatBool(v.Bool())
		default:
			val = strconv.FormatInt(v.Int(), 10)
		}
		h.Write([]byte(path + "=" + val + "\n"))
	}
}
