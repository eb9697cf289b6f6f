package main

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// checker turns what the soak saw into its checks.
type checker struct {
	*soak
	res        *Result
	stores     map[string]map[string]int // URLs in the state store per source and state
	stateBytes int64
	trapDocs   int
}

func (c *checker) add(name string, pass bool, format string, args ...any) {
	c.res.Checks = append(c.res.Checks, check{Name: name, Pass: pass, Figures: fmt.Sprintf(format, args...)})
}

func (c *checker) settled(ok bool, figures string) {
	c.add("a cycle after the last change and fault completed", ok, "%s", figures)
}

// index holds the alias to what the sites serve: the ordinary site exactly, the hostile sites
// without garbage.
func (c *checker) index() error {
	e := es{base: c.opts.ES}
	docs := map[string]map[string]indexedDoc{}
	for _, src := range []string{"site", "trap", "bombs", "drips", "redirects", "lies", "churn", "fanout"} {
		d, err := e.docs(c.opts.Index, src)
		if err != nil {
			return fmt.Errorf("reading the index: %w", err)
		}
		docs[src] = d
	}
	c.ordinary(docs["site"])
	c.bombs(docs["bombs"])
	c.lies(docs["lies"])
	c.redirects(docs["redirects"])
	c.drips(docs["drips"])
	c.churn(docs["churn"])
	c.trapDocs = len(docs["trap"])
	return nil
}

func (c *checker) ordinary(docs map[string]indexedDoc) {
	want := c.site.expected(c.hosts["site"].URL)
	var missing, stale, extra []string
	for u, p := range want {
		d, ok := docs[u]
		switch {
		case !ok:
			missing = append(missing, u)
		case d.Title != p.title || !strings.Contains(d.Body, p.marker):
			stale = append(stale, fmt.Sprintf("%s (title %q, want %q)", u, d.Title, p.title))
		}
	}
	for u := range docs {
		if _, ok := want[u]; !ok {
			extra = append(extra, u)
		}
	}
	n := c.site.counts()
	c.add("index = the ordinary site's pages, latest versions", len(missing)+len(stale)+len(extra) == 0,
		"%d pages served at the end (%d edits, %d added, %d removed in %d changes), %d documents; missing %d%s, stale %d%s, extra %d%s",
		len(want), n.Edited, n.Added, n.Removed, len(c.res.Changes), len(docs),
		len(missing), examples(missing), len(stale), examples(stale), len(extra), examples(extra))
	c.add("aged checks answered 304 from validators", n.Statuses[http.StatusNotModified] > 0,
		"site answered %d× 200, %d× 304, %d× 404", n.Statuses[http.StatusOK], n.Statuses[http.StatusNotModified], n.Statuses[http.StatusNotFound])
	c.add("robots.txt obeyed", n.Private == 0, "%d requests under the disallowed /private/", n.Private)
}

func (c *checker) bombs(docs map[string]indexedDoc) {
	var reqs int
	var sent int64
	var indexed []string
	for p, b := range c.haz.bombs {
		reqs += b.Requests()
		sent += b.Written()
		if _, ok := docs[c.hosts["bombs"].URL+p]; ok {
			indexed = append(indexed, p)
		}
	}
	fetched := reqs > 0
	c.add("compression bombs never indexed", fetched && len(indexed) == 0 && garbageFree(docs),
		"%d bombs of %d MiB each (%s); %d requests, %.1f MB sent; indexed: %d%s",
		len(c.haz.bombs), c.opts.BombSize>>20, encodings(c.haz), reqs, float64(sent)/1e6, len(indexed), examples(indexed))
}

func encodings(h *hostileSites) string {
	var e []string
	for _, b := range h.bombs {
		e = append(e, b.Encoding)
	}
	slices.Sort(e)
	return strings.Join(e, "; ")
}

func (c *checker) lies(docs map[string]indexedDoc) {
	base := c.hosts["lies"].URL
	var wrong []string
	right, refused := 0, 0
	for p, l := range c.haz.lies {
		d, ok := docs[base+p]
		switch {
		case l.title == "" && ok:
			wrong = append(wrong, fmt.Sprintf("%s indexed (title %q)", p, d.Title))
		case l.title == "":
			refused++
		case !ok:
			wrong = append(wrong, p+" not indexed")
		case d.Title != l.title || !garbageFree(map[string]indexedDoc{p: d}):
			wrong = append(wrong, fmt.Sprintf("%s titled %q", p, d.Title))
		default:
			right++
		}
	}
	slices.Sort(wrong)
	c.add("lying charsets and encodings indexed as what they are", len(wrong) == 0,
		"%d pages read as their bytes are, %d with a false Content-Encoding not indexed; wrong %d%s",
		right, refused, len(wrong), examples(wrong))
}

func (c *checker) redirects(docs map[string]indexedDoc) {
	base := c.hosts["redirects"].URL
	want := []string{base + "/", base + "/landing.html"}
	got := slices.Sorted(maps.Keys(docs))
	robots := c.haz.robotsLoop.Requests()
	c.add("redirect loops and chains", slices.Equal(got, want) && robots > 0,
		"robots.txt loop requested %d times and read as allow; indexed %d%s (want the start page and /landing.html)",
		robots, len(got), examples(got))
}

func (c *checker) drips(docs map[string]indexedDoc) {
	base := c.hosts["drips"].URL
	got := slices.Sorted(maps.Keys(docs))
	reqs := 0
	for _, d := range c.haz.drips {
		reqs += d.Requests()
	}
	abandoned := 0
	for _, r := range c.hosts["drips"].rec.requests() {
		if r.Abandoned {
			abandoned++
		}
	}
	c.add("dripping pages given up, never indexed", slices.Equal(got, []string{base + "/"}) && reqs > 0,
		"%d requests for the drips, %d abandoned by the crawler; indexed %d%s (want the start page only)",
		reqs, abandoned, len(got), examples(got))
}

// garbageFree says no document holds what a misread body leaves: replacement characters, NULs,
// invalid UTF-8.
func garbageFree(docs map[string]indexedDoc) bool {
	for _, d := range docs {
		for _, s := range []string{d.Title, d.Body} {
			if !utf8.ValidString(s) || strings.ContainsAny(s, "\ufffd\x00") {
				return false
			}
		}
	}
	return true
}

// trap holds the spider trap to its budget: URLs kept, pages fetched in all and per cycle, and
// the state directory.
func (c *checker) trap() {
	stored := 0
	for _, n := range c.stores["trap"] {
		stored += n
	}
	items400 := int64(0)
	for _, p := range c.res.Phases {
		if strings.HasPrefix(p.Name, "items 400") {
			items400 += p.Items
		}
	}
	cycles := len(c.res.Cycles)
	// Each page once, the start page again each cycle, and a page whose document was
	// refused for good again in a later cycle.
	bound := trapMaxURLs + cycles + int(items400)
	served := int(c.haz.trap.Pages())
	perCycle, over := 0, 0
	reached := false
	for _, cy := range c.res.Cycles {
		t := cy.Sources["trap"]
		perCycle = max(perCycle, t.Fetched)
		if t.Fetched > trapPagesPerCyle {
			over++
		}
		reached = reached || t.Reasons["max_urls"] > 0
	}
	c.add("spider trap stopped at its budget",
		stored > 0 && stored <= trapMaxURLs && served <= bound && over == 0 && reached,
		"%d URLs stored (max_urls %d, reached: %v), %d pages served (at most %d: each URL once, the start page each of %d cycles, %d refused documents again), at most %d fetched in a cycle (max_pages_per_cycle %d); %d trap documents",
		stored, trapMaxURLs, reached, served, bound, cycles, items400, perCycle, trapPagesPerCyle, c.trapDocs)
	c.add("state directory bounded", c.stateBytes <= c.opts.MaxStateMB<<20,
		"%.1f MiB at the end (bound %d MiB); URLs stored %s", float64(c.stateBytes)/(1<<20), c.opts.MaxStateMB, storeSummary(c.stores))
}

func storeSummary(stores map[string]map[string]int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(stores)) {
		n := 0
		for _, v := range stores[name] {
			n += v
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, n))
	}
	return strings.Join(parts, ", ")
}

// memory holds the service's memory to the bound, and its last part, after every change and
// fault, to what it needed before: a service that leaks keeps needing more.
func (c *checker) memory() {
	c.svc.mu.Lock()
	samples := slices.Clone(c.svc.samples)
	c.svc.mu.Unlock()
	c.res.Memory = samples
	var peakRSS, peakAnon, before, after int64
	var tail []memSample
	for _, m := range samples {
		peakRSS, peakAnon = max(peakRSS, m.RSSKB), max(peakAnon, m.AnonKB)
		if m.At.Before(c.res.Quiet) {
			before = max(before, m.AnonKB)
		} else {
			after = max(after, m.AnonKB)
			tail = append(tail, m)
		}
	}
	c.add("memory bounded", len(samples) > 0 && peakAnon <= c.opts.MaxRSSMB<<10,
		"peak RssAnon %.0f MiB (bound %d MiB), peak VmRSS %.0f MiB, %d samples a second apart",
		mib(peakAnon), c.opts.MaxRSSMB, mib(peakRSS), len(samples))
	c.trend(samples, before, after, tail)
}

// minTrendCycles is how many whole cycles the end of the run must hold for a trend to be judged.
const minTrendCycles = 3

// trend holds the cycles of the end, which all do the same work (the site no longer changes,
// the node no longer fails), to the same memory: the peak RssAnon of the later half of them at
// most a tenth (and 16 MiB for the garbage collector's sawtooth) above that of the earlier half.
// A service that leaks needs more each cycle.
func (c *checker) trend(samples []memSample, before, after int64, tail []memSample) {
	var peaks []int64
	for _, cy := range c.res.Cycles {
		if cy.Started.Before(c.res.Quiet) || cy.Outcome != "completed" {
			continue
		}
		var p int64
		for _, m := range samples {
			if !m.At.Before(cy.Started) && !m.At.After(cy.Finished.Add(time.Second)) {
				p = max(p, m.AnonKB)
			}
		}
		peaks = append(peaks, p)
	}
	around := fmt.Sprintf("peak RssAnon %.0f MiB before the last change and fault ended, %.0f MiB after (%s); slope over the end %+.1f MiB/min",
		mib(before), mib(after), clock(c.res.End.Sub(c.res.Quiet)), slope(tail))
	if len(peaks) < minTrendCycles {
		c.add("no memory growth at the end", true, "not judged: the end held %d whole cycle(s), a trend needs %d (a soak of 5m or more has them); %s",
			len(peaks), minTrendCycles, around)
		return
	}
	half := len(peaks) / 2
	earlier, later := slices.Max(peaks[:half]), slices.Max(peaks[half:])
	allowed := earlier + earlier/10 + 16<<10
	perCycle := make([]string, len(peaks))
	for i, p := range peaks {
		perCycle[i] = fmt.Sprintf("%.0f", mib(p))
	}
	c.add("no memory growth at the end", later <= allowed,
		"peak RssAnon of each of the %d cycles at the end: %s MiB; the later half's %.0f MiB against the earlier half's %.0f (at most %.0f); %s",
		len(peaks), strings.Join(perCycle, ", "), mib(later), mib(earlier), mib(allowed), around)
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// slope is the least-squares trend of RssAnon over the samples, in MiB a minute.
func slope(ms []memSample) float64 {
	if len(ms) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, m := range ms {
		x := m.At.Sub(ms[0].At).Minutes()
		y := mib(m.AnonKB)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(ms))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// politeness holds every host's requests to its source's politeness.
func (c *checker) politeness() {
	for _, name := range slices.Sorted(maps.Keys(c.hosts)) {
		h := c.hosts[name]
		p := checkPoliteness(h.rec.requests(), h.maxParallel, h.delay)
		c.res.Hosts = append(c.res.Hosts, hostResult{Name: name, MaxParallel: h.maxParallel, Delay: h.delay, politeness: p})
		gap := "no gaps"
		if p.MinGap >= 0 {
			gap = fmt.Sprintf("shortest gap %v", p.MinGap.Round(10*time.Microsecond))
		}
		rule := fmt.Sprintf("max_parallel_per_host %d", h.maxParallel)
		if h.maxParallel == 1 && h.delay > 0 {
			rule += fmt.Sprintf(", delay %v", h.delay)
		}
		if p.Hops > 0 {
			gap += fmt.Sprintf(" (%d robots.txt redirects followed within its fetch)", p.Hops)
		}
		c.add("politeness: "+name, p.Requests > 0 && p.Count == 0,
			"%s: %d requests, at most %d in flight, %s; violations %d%s", rule, p.Requests, p.MaxInFlight, gap, p.Count, examples(p.Violations))
	}
}

// faults says whether every phase of the schedule met the service's traffic.
func (c *checker) faults() {
	var missed []string
	for _, p := range c.res.Phases {
		if !p.Exercised {
			missed = append(missed, p.Name)
		}
	}
	st := c.proxy.Stats()
	c.add("every fault phase happened", len(c.res.Phases) > 1 && len(missed) == 0,
		"%d phases; proxy saw %d requests, faulted %d, failed %d items; missed %d%s",
		len(c.res.Phases), st.Requests, st.Faulted, st.Items, len(missed), examples(missed))
}

// exit holds the service to a clean stop: exit 0 soon after SIGTERM, never an exit of its own
// before, no panic.
func (c *checker) exit(after time.Duration, stopErr error) {
	code := c.svc.exitCode()
	figures := fmt.Sprintf("exit %d %.1fs after SIGTERM (bound %v)", code, after.Seconds(), c.opts.ExitWithin)
	if stopErr != nil {
		figures += ": " + stopErr.Error()
	}
	c.add("exits 0 within seconds of SIGTERM", stopErr == nil && code == 0 && after <= c.opts.ExitWithin, "%s", figures)
	crashes, errs := logProblems(c.svc.logPath)
	early := c.svc.exitedEarly()
	if m, ok := c.svc.killedForMemory(); ok {
		c.add("not killed for memory", false, "the soak killed the service %s after the start at %.0f MiB RssAnon, past 4× the bound of %d MiB",
			clock(m.At.Sub(c.res.Start)), mib(m.AnonKB), c.opts.MaxRSSMB)
	}
	outcomes := map[string]int{}
	for _, cy := range c.res.Cycles {
		outcomes[cy.Outcome]++
	}
	c.add("never crashed", crashes == 0 && !early,
		"ran until SIGTERM: %v; %d panics; cycles: %s; %d ERROR log lines (cycles that failed while the node was failing)",
		!early, crashes, outcomeSummary(outcomes), len(errs))
}

func outcomeSummary(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// examples is up to three of list, for a figure.
func examples(list []string) string {
	if len(list) == 0 {
		return ""
	}
	slices.Sort(list)
	more := ""
	if len(list) > 3 {
		more = ", …"
		list = list[:3]
	}
	return " (" + strings.Join(list, ", ") + more + ")"
}
