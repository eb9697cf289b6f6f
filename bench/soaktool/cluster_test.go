package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

// Every page of every host of the cluster's crawl is reached from one start page, through the
// links that stay on a host and those to the next host; anything else is 404.
func TestClusterHostsLinkEveryPageOfEveryHost(t *testing.T) {
	urls := []string{"http://h0", "http://h1", "http://h2", "http://h3", "http://h4", "http://h5"}
	handlers := map[string]http.Handler{}
	for i, u := range urls {
		handlers[u] = clusterHandler(i, urls)
	}
	href := regexp.MustCompile(`href="([^"]+)"`)
	seen := map[string]bool{}
	queue := []string{urls[0] + "/"}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		req := httptest.NewRequest(http.MethodGet, u, nil)
		w := httptest.NewRecorder()
		handlers["http://"+req.Host].ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", u, w.Code)
		}
		for _, m := range href.FindAllStringSubmatch(w.Body.String(), -1) {
			next := m[1]
			if next[0] == '/' {
				next = "http://" + req.Host + next
			}
			queue = append(queue, next)
		}
	}
	if len(seen) != clusterHosts*clusterPages {
		t.Errorf("%d pages reached, want %d", len(seen), clusterHosts*clusterPages)
	}
	for _, path := range []string{"/robots.txt", "/p0.html", "/p40.html", "/p07.html", "/p1.htmlx"} {
		w := httptest.NewRecorder()
		handlers[urls[1]].ServeHTTP(w, httptest.NewRequest(http.MethodGet, urls[1]+path, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, w.Code)
		}
	}
}
