// Package rules decides, for every URL crawlspace meets, whether it belongs
// to a source's crawl space: whether to fetch it, keep it in the index and
// follow its links, with which priority and extra metadata, and why not.
//
// Every rule form of the five seed products compiles into one Source:
// Funnelback include/exclude patterns, kill lists and the reject list; IBM
// domain, prefix and address rules, path and link depth and MIME types;
// Smartsite start hosts, ignored extensions and the query filter; FDSE
// schemes, URL length, query strings and start directories; Exalead crawl
// rules. Compile builds it once from the configuration; deciding a URL then
// costs a few microseconds even with thousands of rules, because rules are
// indexed by their literal parts rather than scanned.
//
// The checks run in this order, cheapest first; the first that refuses gives
// the Reason and the Rule (see docs/rules.md):
//
//	scheme, url_too_long, query_string, max_path_depth, max_link_depth,
//	ignored_extension, offsite, outside_start_dir, forbidden_address (a
//	host that is an IP address), forbidden_domain, forbidden_prefix,
//	not_included, excluded, rejected, rule_ignore,
//	then killed / rule_noindex / rule_nofollow for URLs that are crawled
//	but not indexed or not followed.
//
// forbidden_address is decided for host names after DNS (DecideAddress),
// mime_type and the extensionless ignored_extension from response headers
// (DecideMIME), and robots by the robots.txt cache.
//
// Rules judge a URL as found: resolved and spelt by urlnorm (Found), its
// query parameters in the order the site wrote them, every one kept.
// DecideFound and Set.Route judge it, then its key, the URL the source's
// query filter and the sorting of parameters make of it (Source.Key),
// under which it is queued, stored and indexed. Decide judges the URL it
// is given, as is, and does not normalise it again: a URL found, or a key.
package rules

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Reason says why a URL is not crawled, indexed or followed. The empty
// reason means the URL is allowed in full.
type Reason string

// The reasons, in the order their checks run.
const (
	ReasonNone             Reason = ""
	ReasonInvalid          Reason = "invalid_url"       // not a normalised absolute URL
	ReasonScheme           Reason = "scheme"            // schemes
	ReasonURLTooLong       Reason = "url_too_long"      // max_url_length
	ReasonQueryString      Reason = "query_string"      // follow_query_strings: false
	ReasonMaxPathDepth     Reason = "max_path_depth"    // max_path_depth
	ReasonMaxLinkDepth     Reason = "max_link_depth"    // max_link_depth
	ReasonIgnoredExtension Reason = "ignored_extension" // ignored_extensions, always_ignored_extensions
	ReasonOffsite          Reason = "offsite"           // stay_on_start_hosts
	ReasonOutsideStartDir  Reason = "outside_start_dir" // stay_in_start_dir
	ReasonForbiddenDomain  Reason = "forbidden_domain"  // rules: forbid domain
	ReasonForbiddenPrefix  Reason = "forbidden_prefix"  // rules: forbid prefix
	ReasonNotIncluded      Reason = "not_included"      // include
	ReasonExcluded         Reason = "excluded"          // exclude
	ReasonRejected         Reason = "rejected"          // reject_list
	ReasonRuleIgnore       Reason = "rule_ignore"       // crawl_rules: ignore or accept: false
	ReasonKilled           Reason = "killed"            // kill_exact, kill_patterns: crawled, not indexed
	ReasonRuleNoindex      Reason = "rule_noindex"      // crawl_rules: index: false
	ReasonRuleNofollow     Reason = "rule_nofollow"     // crawl_rules: follow: false
	ReasonForbiddenAddress Reason = "forbidden_address" // rules: forbid address, allow_private_networks
	ReasonMIMEType         Reason = "mime_type"         // mime_types
	ReasonRobots           Reason = "robots"            // robots.txt
	ReasonLoginPage        Reason = "login_page"        // auth.form.login_url: fetched to sign in, never crawled
	ReasonLogout           Reason = "logout"            // auth.form.logout_patterns: would end the session
)

// Decision is what the crawl space says about one URL.
type Decision struct {
	// Crawl: fetch it. Follow: queue its links. Index: keep it in the index.
	Crawl, Follow, Index bool
	// Priority is the crawl rules' shift, -2 (highest) to 2 (lowest).
	Priority int
	// Source is the name of the source the URL belongs to, or the name a
	// crawl rule's source action gave it.
	Source string
	// Meta holds add_meta values by extra_* field name. It is shared by
	// every decision of the same rule: read it, never change it.
	Meta map[string][]string
	// Reason is empty when the URL is crawled, indexed and followed.
	Reason Reason
	// Rule names the config entry that decided, as "file:line:col key.path"
	// (config.Ref), or "file:line" of a reject list; "" when no rule did.
	// For an allowed URL it is the most specific rule that allowed it: the
	// matching crawl rule, else an allow prefix rule, an allow domain rule
	// or the include pattern.
	Rule string
}

// Set is the compiled crawl space of every source of a configuration.
type Set struct {
	sources  []*Source
	byName   map[string]*Source
	warnings []string
}

// Sources returns the sources in config order.
func (set *Set) Sources() []*Source { return set.sources }

// Source returns the source called name, or nil.
func (set *Set) Source(name string) *Source { return set.byName[name] }

// Warnings lists problems worth logging that do not stop a crawl, such as a
// reject list file that does not exist yet or a start URL the query filter
// rewrites, each placed like an error: "file:line:col: key.path: message".
func (set *Set) Warnings() []string { return set.warnings }

// Route picks the source a URL found on a page, in a sitemap or feed or in
// a Location header belongs to: from (the source of the page it was found
// on) when from crawls it, else the first other source, in config order,
// that crawls it. found is the URL as found (urlnorm.Found); each source
// judges it with DecideFound. The URL returned is the key to queue when
// the decision crawls, else the one refused, both as that source spells
// them (see DecideFound). When no source crawls it, Route returns from and
// its refusal, or with from nil the refusal of the first source whose
// start URLs share the URL's scheme, host and port (the most telling
// one), else of the first source.
func (set *Set) Route(found string, depth int, from *Source) (*Source, string, Decision) {
	var fromU string
	var fromD Decision
	if from != nil {
		if fromU, fromD = from.DecideFound(found, depth); fromD.Crawl {
			return from, fromU, fromD
		}
	}
	for _, s := range set.sources {
		if s == from {
			continue
		}
		if u, d := s.DecideFound(found, depth); d.Crawl {
			return s, u, d
		}
	}
	if from != nil {
		return from, fromU, fromD
	}
	if len(set.sources) == 0 {
		return nil, found, Decision{Reason: ReasonOffsite}
	}
	best := set.sources[0]
	if p, ok := urlnorm.Split(found); ok {
		best = set.HostOwner(p.Origin)
	}
	u, d := best.DecideFound(found, depth)
	return best, u, d
}

// HostOwner is the first source whose start URLs are on hostKey (scheme,
// host and port, as urlnorm.Origin gives it), else the first source: the
// source whose politeness and robots.txt settings the host keeps, whichever
// source found its URLs (fetch.Set.Owner, which the crawler asks, picks the
// same). Nil without sources.
func (set *Set) HostOwner(hostKey string) *Source {
	for _, s := range set.sources {
		if s.origins[hostKey] {
			return s
		}
	}
	if len(set.sources) == 0 {
		return nil
	}
	return set.sources[0]
}

// RouteRaw is Route for a URL as written (a start URL, a URL typed into
// explain or status): it is spelt as found, then routed; found is that
// spelling. A URL that cannot be read is refused as invalid_url, with the
// error.
func (set *Set) RouteRaw(raw string, depth int) (s *Source, u, found string, d Decision, err error) {
	found, err = urlnorm.Found(raw)
	if err != nil {
		return nil, raw, raw, Decision{Reason: ReasonInvalid}, err
	}
	s, u, d = set.Route(found, depth, nil)
	return s, u, found, d, nil
}

// Reload re-reads every source's reject list; see Source.Reload.
func (set *Set) Reload() (changed bool, err error) {
	var errs []error
	for _, s := range set.sources {
		c, e := s.Reload()
		changed = changed || c
		if e != nil {
			errs = append(errs, e)
		}
	}
	return changed, errors.Join(errs...)
}

// Source is one source's compiled crawl space. It is safe for concurrent use.
type Source struct {
	// Name is the source's name in the config.
	Name string

	cfg       *config.Config
	path      string
	norm      *urlnorm.Normalizer
	startURLs []string
	// startFound holds each start URL as found.
	startFound []string

	// Form sign-in keeps the crawl off its login page and logout links.
	loginOrigin, loginPath, loginRef string
	logout                           []string
	logoutRef                        string

	schemes        []string
	schemesRef     string
	maxURLLen      int
	maxURLLenRef   string
	followQuery    bool
	followQueryRef string
	maxPathDepth   int
	maxPathRef     string
	maxLinkDepth   int
	maxLinkRef     string

	ignoredExt  map[string]string // extension -> ref
	mimeIgnored map[string]string // MIME type of an ignored extension -> ref
	mimeTypes   map[string]bool
	mimeWild    []string // "text/" for text/*; "" for */*
	mimeRef     string

	stayOnHosts bool
	origins     map[string]bool
	stayHostRef string
	stayInDir   bool
	dirs        radix
	stayDirRef  string

	ibm      ibmRules
	ruleRefs []string

	// render is the source's rendering, nil when off; renders is true when
	// it or any crawl rule renders, anyRuleRenders when a rule has a
	// render block.
	render                  *Render
	renders, anyRuleRenders bool

	pats        *patternSet
	hasInclude  bool
	includeRef  string
	includeRefs []string
	excludeRefs []string
	killRefs    []string
	killExact   map[string]string // URL -> ref

	rejectPath string
	reject     atomic.Pointer[rejectList]
	reloadMu   sync.Mutex

	crawlRules []crawlRule

	allowPrivate bool
	privateRef   string
	// behindProxy: the crawler dials only the proxy, so no address of a
	// crawled host is ever judged.
	behindProxy bool
}

// Groups of the source's pattern set.
const (
	gInclude = iota
	gExclude
	gKill
)

// Compile builds the crawl space of every source of cfg. Every problem is
// reported, positioned, in the returned config.Errors: regular expressions
// RE2 cannot run (naming the construct), malformed IBM rules and netmasks,
// bad crawl rule values, unreadable reject lists, and start URLs that their
// own source's rules refuse.
func Compile(cfg *config.Config) (*Set, error) {
	var errs, warnings config.Errors
	set := &Set{byName: map[string]*Source{}}
	for i := range cfg.Sources {
		s := compileSource(cfg, i, &errs, &warnings)
		set.sources = append(set.sources, s)
		set.byName[s.Name] = s
	}
	if w := cfg.ServiceWarning(); w != nil {
		warnings = append(warnings, w)
	}
	inFileOrder := func(a, b *config.Error) int {
		if a.File != b.File {
			if a.File == cfg.File {
				return -1
			}
			if b.File == cfg.File {
				return 1
			}
			return cmp.Compare(a.File, b.File)
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, inFileOrder)
		return nil, errs
	}
	slices.SortStableFunc(warnings, inFileOrder)
	for _, w := range warnings {
		set.warnings = append(set.warnings, w.Error())
	}
	return set, nil
}

func compileSource(cfg *config.Config, i int, errs, warnings *config.Errors) *Source {
	src := &cfg.Sources[i]
	path := config.SourcePath(i)
	at := func(key string) string { return path + "." + key }
	errorf := func(p, format string, args ...any) { *errs = append(*errs, cfg.Errorf(p, format, args...)) }
	warnf := func(p, format string, args ...any) { *warnings = append(*warnings, cfg.Errorf(p, format, args...)) }
	s := &Source{Name: src.Name, cfg: cfg, path: path}

	s.norm = urlnorm.New(src.HonoredQueryParams)
	if a := src.Auth; a != nil && a.Method == config.AuthForm {
		if lu, err := urlnorm.Normalize(a.Form.LoginURL); err == nil {
			if p, ok := urlnorm.Split(lu); ok {
				s.loginOrigin, s.loginPath = p.Origin, strings.TrimSuffix(p.Path, "/")
				s.loginRef = cfg.Ref(at("auth.form.login_url"))
			}
		}
		for _, pat := range a.Form.LogoutPatterns {
			s.logout = append(s.logout, strings.ToLower(pat))
		}
		s.logoutRef = cfg.Ref(at("auth.form.logout_patterns"))
	}
	if w := cfg.PlainHTTPCredentials(i); w != nil {
		*warnings = append(*warnings, w)
	}

	s.schemes, s.schemesRef = src.Schemes, cfg.Ref(at("schemes"))
	s.maxURLLen, s.maxURLLenRef = src.MaxURLLength, cfg.Ref(at("max_url_length"))
	s.followQuery, s.followQueryRef = *src.FollowQueryStrings, cfg.Ref(at("follow_query_strings"))
	s.maxPathDepth, s.maxPathRef = src.MaxPathDepth, cfg.Ref(at("max_path_depth"))
	s.maxLinkDepth, s.maxLinkRef = src.MaxLinkDepth, cfg.Ref(at("max_link_depth"))

	s.compileExtensions(cfg, src, at)

	s.ibm.domainIx.reverse = true
	s.ruleRefs = make([]string, len(src.Rules))
	for j, line := range src.Rules {
		p := fmt.Sprintf("%s[%d]", at("rules"), j)
		s.ruleRefs[j] = cfg.Ref(p)
		if err := s.ibm.add(j, line); err != nil {
			errorf(p, "%v", err)
		}
	}

	s.pats = newPatternSet(3)
	for _, g := range []struct {
		group int
		key   string
		list  []string
		refs  *[]string
	}{
		{gInclude, "include", src.Include, &s.includeRefs},
		{gExclude, "exclude", src.Exclude, &s.excludeRefs},
		{gKill, "kill_patterns", src.KillPatterns, &s.killRefs},
	} {
		*g.refs = make([]string, len(g.list))
		for j, entry := range g.list {
			p := fmt.Sprintf("%s[%d]", at(g.key), j)
			(*g.refs)[j] = cfg.Ref(p)
			if err := s.pats.add(g.group, j, entry); err != nil {
				errorf(p, "%v", err)
			}
		}
	}
	s.hasInclude, s.includeRef = len(src.Include) > 0, cfg.Ref(at("include"))
	s.pats.finish()

	// Extraction rules are scoped in these forms too; mapping compiles
	// them again, trusting that this reported what does not compile.
	for j, r := range src.Extraction.Rules {
		if _, err := NewScope(r.Include, r.Exclude); err != nil {
			var se *ScopeError
			errors.As(err, &se)
			key := "include"
			if se.Exclude {
				key = "exclude"
			}
			errorf(fmt.Sprintf("%s[%d].%s[%d]", at("extraction.rules"), j, key, se.Index), "%v", se.Err)
		}
	}

	// Entries are keys with every parameter, like the keys they are
	// compared with.
	s.killExact = map[string]string{}
	for j, raw := range src.KillExact {
		p := fmt.Sprintf("%s[%d]", at("kill_exact"), j)
		u, err := urlnorm.Normalize(raw)
		if err != nil {
			errorf(p, "%v", err)
			continue
		}
		s.killExact[u] = cfg.Ref(p)
		if fetch := s.Key(u); fetch != u {
			// A killed link is still followed, and the page it leads to is
			// fetched and indexed as what the filter makes of it.
			names := dropped(u, fetch)
			warnf(p, "the query filter drops %s from %s, so no document has this URL and the entry kills nothing: the page is fetched and indexed as %s (list %s in honored_query_params to keep %[4]s)",
				names, u, fetch, pronoun(names))
		}
	}

	if src.RejectList != "" {
		s.rejectPath = src.RejectList
		rl, err := loadRejectList(s.rejectPath)
		switch {
		case err == nil:
		case errors.Is(err, errMissing):
			warnf(at("reject_list"), "%v; treated as empty until it appears", err)
		default:
			var ce config.Errors
			if errors.As(err, &ce) {
				*errs = append(*errs, ce...)
			} else {
				errorf(at("reject_list"), "%v", err)
			}
		}
		s.reject.Store(rl)
	}

	mc := &matchCompiler{cfg: cfg, errs: errs}
	for j := range src.CrawlRules {
		r := &src.CrawlRules[j]
		p := fmt.Sprintf("%s[%d]", at("crawl_rules"), j)
		cr := crawlRule{
			match:    mc.compile(&r.Match, p+".match"),
			ignore:   r.Ignore || (r.Accept != nil && !*r.Accept),
			index:    r.Index,
			follow:   r.Follow,
			source:   r.Source,
			priority: r.Priority,
			ref:      cfg.Ref(p),
		}
		if r.Render != nil {
			cr.renderSet, cr.render = true, compileRender(r.Render, cfg.Ref(p))
			s.anyRuleRenders = true
			s.renders = s.renders || cr.render != nil
		}
		if len(r.AddMeta) > 0 {
			cr.meta = make(map[string][]string, len(r.AddMeta))
			for k, v := range r.AddMeta {
				f := config.AddMetaField(k)
				cr.meta[f] = append(cr.meta[f], v)
			}
		}
		s.crawlRules = append(s.crawlRules, cr)
	}

	s.render = compileRender(&src.Render, cfg.Ref(at("render")))
	s.renders = s.renders || s.render != nil

	s.allowPrivate, s.privateRef = cfg.AllowPrivateNetworks, cfg.Ref("allow_private_networks")
	s.behindProxy = cfg.Fetch.Proxy != ""

	// Start URLs last: they are checked against everything above.
	s.stayOnHosts, s.stayHostRef = *src.StayOnStartHosts, cfg.Ref(at("stay_on_start_hosts"))
	s.stayInDir, s.stayDirRef = src.StayInStartDir, cfg.Ref(at("stay_in_start_dir"))
	s.origins = map[string]bool{}
	type start struct {
		path, found string
	}
	var starts []start
	for j, raw := range src.StartURLs {
		p := fmt.Sprintf("%s[%d]", at("start_urls"), j)
		found, err := urlnorm.Found(raw)
		if err != nil {
			errorf(p, "start URL: %v", err)
			continue
		}
		u := s.Key(found)
		if fetch := s.Fetch(found); fetch != found {
			names := dropped(found, fetch)
			warnf(p, "the query filter drops %s from start URL %s, so %s is fetched instead (list %s in honored_query_params to keep %[4]s)",
				names, found, fetch, pronoun(names))
		}
		parts, _ := urlnorm.Split(u)
		s.origins[parts.Origin] = true
		dir := parts.Origin + parts.Path[:strings.LastIndexByte(parts.Path, '/')+1]
		s.dirs.insert(dir, int32(j))
		s.startURLs = append(s.startURLs, u)
		s.startFound = append(s.startFound, found)
		starts = append(starts, start{p, found})
	}
	for _, st := range starts {
		// A literal address is judged here too; host names are resolved later.
		u, d := s.DecideFound(st.found, 0)
		if !d.Crawl {
			rule := d.Rule
			if rule == "" {
				rule = "no rule"
			}
			errorf(st.path, "start URL %s is outside its own source's crawl space: %s (%s)", u, d.Reason, rule)
		}
	}
	// A sitemap or feed the crawl space refuses is never requested: said
	// at once rather than found in a report.
	for _, named := range []struct {
		key  string
		list []string
	}{{"sitemaps", src.Sitemaps}, {"feeds", src.Feeds}} {
		for j, raw := range named.list {
			fu, err := urlnorm.Normalize(raw)
			if err != nil {
				continue // the config's own check says why
			}
			if d := s.DecideListing(fu); !d.Crawl {
				warnf(fmt.Sprintf("%s[%d]", at(named.key), j), "%s is outside the source's crawl space, so it is never read: %s (%s)", fu, d.Reason, d.Rule)
			}
		}
	}
	return s
}

// dropped names the query parameters of found that fetch, its rewrite by
// the query filter, lacks: "sort" or "day, month".
func dropped(found, fetch string) string {
	_, fq, _ := strings.Cut(found, "?")
	_, kept, _ := strings.Cut(fetch, "?")
	keep := strings.Split(kept, "&")
	var names []string
	for p := range strings.SplitSeq(fq, "&") {
		if i := slices.Index(keep, p); i >= 0 {
			keep[i] = "" // a repeated parameter is kept once per copy
			continue
		}
		name, _, _ := strings.Cut(p, "=")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// pronoun says "it" or "them" for a list from dropped.
func pronoun(list string) string {
	if strings.Contains(list, ", ") {
		return "them"
	}
	return "it"
}

func (s *Source) compileExtensions(cfg *config.Config, src *config.Source, at func(string) string) {
	s.ignoredExt = map[string]string{}
	add := func(ext, ref string) {
		if e := normExtension(ext); e != "" {
			if _, dup := s.ignoredExt[e]; !dup {
				s.ignoredExt[e] = ref
			}
		}
	}
	for j, e := range src.IgnoredExtensions {
		ref := cfg.Ref(fmt.Sprintf("%s[%d]", at("ignored_extensions"), j))
		if strings.EqualFold(e, "default") {
			for _, d := range DefaultIgnoredExtensions {
				add(d, ref)
			}
			continue
		}
		add(e, ref)
	}
	for j, e := range cfg.AlwaysIgnoredExtensions {
		add(e, cfg.Ref(fmt.Sprintf("always_ignored_extensions[%d]", j)))
	}

	s.mimeRef = cfg.Ref(at("mime_types"))
	s.mimeTypes = map[string]bool{}
	for _, m := range src.MimeTypes {
		m = strings.ToLower(m)
		switch {
		case m == "*/*":
			s.mimeWild = append(s.mimeWild, "")
		case strings.HasSuffix(m, "/*"):
			s.mimeWild = append(s.mimeWild, strings.TrimSuffix(m, "*"))
		default:
			s.mimeTypes[m] = true
		}
	}
	// A type the administrator lists to index is not skipped because some
	// ignored extension (say the default list's xml) shares it.
	s.mimeIgnored = map[string]string{}
	for e, ref := range s.ignoredExt {
		for _, t := range typesOf(e) {
			if _, dup := s.mimeIgnored[t]; !dup && !s.mimeTypes[t] {
				s.mimeIgnored[t] = ref
			}
		}
	}
}

// StartURLs returns the source's start URLs as they are queued: their
// keys.
func (s *Source) StartURLs() []string { return s.startURLs }

// StartFound returns the i-th start URL as found: as written in the
// config, spelt by urlnorm.Found.
func (s *Source) StartFound(i int) string { return s.startFound[i] }

// Normalize normalises raw into its key: the source's query filter
// applied, parameters sorted (see Key).
func (s *Source) Normalize(raw string) (string, error) { return s.norm.Normalize(raw) }

// Key is the key of found, a URL as found: the parameters the source's
// query filter drops dropped, the rest sorted (urlnorm's steps 4 and 5).
// The page is queued, stored and indexed under it, so ?a=1&b=2 and
// ?b=2&a=1 are one page. A URL without a query costs nothing.
func (s *Source) Key(found string) string { return keyOf(s.norm.Normalize, found) }

// keyOf is the key normalize makes of found; a URL without a query is its
// own key.
func keyOf(normalize func(string) (string, error), found string) string {
	if strings.IndexByte(found, '?') < 0 {
		return found
	}
	u, err := normalize(found)
	if err != nil {
		return found
	}
	return u
}

// Fetch is the URL requested for found, a URL as found: the parameters the
// query filter drops dropped, the others as the site wrote them.
func (s *Source) Fetch(found string) string { return s.norm.Filter(found) }

// Request is the URL to request for a queued page: its URL as found with
// the query filter applied (Fetch), or its key when it was queued as
// found (found is "") or the filter has changed since, so that what it
// asks for is no longer the page the key names.
func (s *Source) Request(key, found string) string {
	if found == "" {
		return key
	}
	if f := s.Fetch(found); s.Key(f) == key {
		return f
	}
	return key
}

// DecideFound judges a URL as found (urlnorm.Found: its parameters as the
// site wrote them, every one kept): every check of Decide sees it, so a
// rule about a parameter, or about their order, judges what the site
// wrote, and a refusal keeps the link out. Then the URL's key (Key) is
// judged too, as it is again when it is fetched: a refusal of it keeps the
// link out as well. It returns the URL the decision is about: the key to
// queue when d.Crawl, else the one refused (the key of the URL as found
// with every parameter kept, or its key). What a crawled URL's page
// becomes (indexed or killed, followed, priority, source, add_meta) is the
// key's decision: every spelling of it shares one document, and the first
// link found must not decide for the others.
func (s *Source) DecideFound(found string, depth int) (string, Decision) {
	d := s.Decide(found, depth)
	if !d.Crawl {
		return refusedKey(found), d
	}
	u := s.Key(found)
	if u == found {
		return found, d
	}
	return u, s.Decide(u, depth)
}

// refusedKey is what a URL refused as found is recorded under: its key
// with every parameter kept, so that the spellings of one URL are one
// refusal.
func refusedKey(found string) string { return keyOf(urlnorm.Normalize, found) }

// refuse is a decision not to crawl.
func (s *Source) refuse(r Reason, rule string) Decision {
	return Decision{Source: s.Name, Reason: r, Rule: rule}
}

func (s *Source) allowed(rule string) Decision {
	return Decision{Crawl: true, Follow: true, Index: true, Source: s.Name, Rule: rule}
}
