package hostile

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
)

var href = regexp.MustCompile(`href="([^"]+)"`)

func linksOf(t *testing.T, srv *httptest.Server, path string) []string {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", path, res.StatusCode, err)
	}
	var out []string
	for _, m := range href.FindAllStringSubmatch(string(body), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestTrapLinksFreshURLsTheSameWayEveryTime(t *testing.T) {
	trap := &Trap{Seed: 7, Links: 12, Offsite: 3}
	srv := httptest.NewServer(trap)
	defer srv.Close()

	home := linksOf(t, srv, "/")
	if len(home) != 15 {
		t.Fatalf("home links %d URLs, want 12 of its own and 3 offsite", len(home))
	}
	if again := linksOf(t, srv, "/"); !slices.Equal(again, home) {
		t.Errorf("the same page links other URLs the second time:\n%v\n%v", home, again)
	}
	seen := map[string]bool{}
	for _, p := range []string{"/", home[0], home[1], "/any/thing?x=1"} {
		for _, l := range linksOf(t, srv, p) {
			if seen[l] {
				t.Errorf("%s links %s, which another page links too", p, l)
			}
			seen[l] = true
		}
	}
	other := httptest.NewServer(&Trap{Seed: 8})
	defer other.Close()
	if links := linksOf(t, other, "/"); slices.Contains(home, links[0]) {
		t.Error("another seed gives the same links")
	}
	res, err := http.Get(srv.URL + "/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("robots.txt answers %d, want 404", res.StatusCode)
	}
	if got := trap.Pages(); got != 6 {
		t.Errorf("trap counts %d pages, want 6 (robots.txt aside)", got)
	}
}
