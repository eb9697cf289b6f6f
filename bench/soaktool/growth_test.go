package main

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChurnServesOneTextUnderEveryIDWithAFreshLinkEachTime(t *testing.T) {
	c := newChurn(7)
	get := func(target string) string {
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", target, w.Code)
		}
		return w.Body.String()
	}
	a, b := get("/"), get("/?id=0123")
	link := func(body string) string {
		i := strings.Index(body, `href="`)
		if i < 0 {
			t.Fatalf("no link in %s", body)
		}
		return body[i+6 : i+6+strings.Index(body[i+6:], `"`)]
	}
	if la, lb := link(a), link(b); la == lb || !strings.HasPrefix(la, "/?id=") {
		t.Errorf("links %q and %q, want two fresh copies", la, lb)
	}
	if strings.Replace(a, link(a), "", 1) != strings.Replace(b, link(b), "", 1) {
		t.Error("two copies differ beyond their link")
	}
}

func TestFanoutIndexesListTheirChildrenAtEveryLevel(t *testing.T) {
	f := &fanout{base: "http://fan.test"}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/sitemap/1/3.xml", nil))
	var idx struct {
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(w.Body.Bytes(), &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Sitemaps) != fanoutChildren || idx.Sitemaps[0].Loc != "http://fan.test/sitemap/2/150000.xml" {
		t.Errorf("%d children, the first %+v", len(idx.Sitemaps), idx.Sitemaps[:min(1, len(idx.Sitemaps))])
	}
	w = httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/robots.txt", nil))
	if !strings.Contains(w.Body.String(), "Sitemap: http://fan.test/sitemap/0/0.xml") {
		t.Errorf("robots.txt %q names no sitemap", w.Body.String())
	}
	if f.served() != 1 {
		t.Errorf("%d sitemaps counted, want 1", f.served())
	}
}

// The churn's checks count requests per cycle, and hold the group's document to the copies
// fetched before the last completed cycle ended.
func TestChurnCheckFindsAURLFetchedTwiceInACycleAndACopyNotListed(t *testing.T) {
	base := "http://churn.test"
	c := &checker{soak: &soak{hosts: map[string]*host{"churn": {URL: base, rec: &recorder{}}}},
		res: &Result{Cycles: []cycle{
			{Started: at(0), Finished: at(100), Outcome: "completed"},
			{Started: at(1000), Finished: at(1100), Outcome: "completed"},
		}}}
	c.hosts["churn"].rec.reqs = []request{
		{Path: "/robots.txt", Start: at(1)}, {Path: "/", Start: at(2)}, {Path: "/?id=a", Start: at(3)},
		{Path: "/", Start: at(1001)}, {Path: "/?id=a", Start: at(1002)}, {Path: "/?id=b", Start: at(1003)},
		// After the last completed cycle: not yet listed, rightly.
		{Path: "/?id=c", Start: at(2000)},
	}
	c.churn(map[string]indexedDoc{base + "/": {URL: base + "/", Duplicates: []string{base + "/?id=a", base + "/?id=b"}}})
	if len(c.res.Checks) != 2 || !c.res.Checks[0].Pass || !c.res.Checks[1].Pass {
		t.Fatalf("a churn crawled once a cycle: %+v", c.res.Checks)
	}

	c.res.Checks = nil
	c.hosts["churn"].rec.reqs = append(c.hosts["churn"].rec.reqs, request{Path: "/", Start: at(1050)})
	c.churn(map[string]indexedDoc{base + "/": {URL: base + "/", Duplicates: []string{base + "/?id=a"}}})
	if c.res.Checks[0].Pass || !strings.Contains(c.res.Checks[0].Figures, "cycle 2: / ×2") {
		t.Errorf("the start page fetched twice in cycle 2: %+v", c.res.Checks[0])
	}
	if c.res.Checks[1].Pass || !strings.Contains(c.res.Checks[1].Figures, "/?id=b") {
		t.Errorf("a copy fetched in a completed cycle and not listed: %+v", c.res.Checks[1])
	}
}
