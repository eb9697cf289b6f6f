package robots_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/conformance"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/urlnorm"
)

type robotsCase struct {
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	Class      string   `json:"class"`
	Robots     string   `json:"robots"`
	RobotsB64  string   `json:"robots_b64"`
	Agent      string   `json:"agent"`
	URL        string   `json:"url"`
	Allowed    bool     `json:"allowed"`
	Path       string   `json:"path"`
	Valid      bool     `json:"valid"`
	Sitemaps   []string `json:"sitemaps"`
	Applicable *bool    `json:"applicable"`
	Why        string   `json:"why"`
}

// asFound is the path and query robots.txt judges for a URL, as the
// crawler gives them to it: the URL as found (urlnorm.Found), nothing
// sorted or filtered. An empty URL, which no crawler tests, is tested as
// empty, which Test reads as "/" (as Google does).
func asFound(raw string) (string, bool) {
	if raw == "" {
		return "", true
	}
	u, err := urlnorm.Found(raw)
	if err != nil {
		return "", false
	}
	return urlnorm.RequestTarget(u), true
}

// googleOnly are the cases of Google's reading, not RFC 9309's, on which
// crawlspace answers otherwise, with the reason. Every case classed rfc
// must pass; a google-specific one must pass unless it is listed here.
var googleOnly = map[string]string{
	"ID_UTF8ByteOrderMarkIsSkipped#2":             "a partial BOM is skipped by Google only: to RFC 9309's grammar the first key is no user-agent",
	"ID_UTF8ByteOrderMarkIsSkipped#3":             "a partial BOM is skipped by Google only",
	"ID_Encoding#3":                               "the URL as found is percent-encoded before it is matched (RFC 9309 2.2.2), so the Allow rule matches; Google leaves that to its caller",
	"ID_Encoding#5":                               "the URL as found is percent-encoded before it is matched (RFC 9309 2.2.2), so the Allow rule matches; Google leaves that to its caller",
	"ID_Encoding#6":                               "%62%61%7A is baz: RFC 9309 2.2.2's table has them match",
	"GoogleOnly_IndexHTMLisDirectory#1":           "a pattern ending in index.html allows its directory in Google's reading only",
	"ID_LineSyntax_Line#3":                        "a line without its colon is skipped, as RFC 9309's grammar says (docs/robots.md); Google takes a space for it",
	"Reporting_LinesNumbersAreCountedCorrectly#1": "a line without its colon is skipped, so no group of bar's starts there",
	"Reporting_LinesNumbersAreCountedCorrectly#2": "a line without its colon is skipped, so no group of bar's starts there",
	"GoogleOnly_AcceptUserAgentUpToFirstSpace#3":  "the agent \"Foo Bar\" is a User-Agent value whose product token is its first word, Foo (docs/robots.md); Google matches it whole",
	"GoogleOnly_LineTooLong#2":                    "Google cuts lines at 16,664 bytes; RFC 9309 sets no line limit, and neither does crawlspace (within the 500 KiB it reads)",
	"GoogleOnly_LineTooLong#5":                    "Google cuts lines at 16,664 bytes; RFC 9309 sets no line limit, and neither does crawlspace (within the 500 KiB it reads)",
}

// Google's reference parser's tests, as data: each URL is tested as the
// crawler tests a URL as found, its path and query as the site wrote them.
// Cases the data marks not applicable (no absolute URL, or a bare product
// token where crawlspace takes a User-Agent value) are counted, not run.
func TestGoogleRobotsTxtConformance(t *testing.T) {
	data, err := os.ReadFile(conformance.Path(t, "google_robots_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []robotsCase }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	differ := map[string]bool{}
	ran, skipped := 0, 0
	for _, c := range file.Cases {
		if c.Applicable != nil && !*c.Applicable {
			skipped++
			continue
		}
		ran++
		var ok bool
		var got any
		switch c.Kind {
		case "verdict":
			body := []byte(c.Robots)
			if c.RobotsB64 != "" {
				body, _ = base64.StdEncoding.DecodeString(c.RobotsB64)
			}
			p, valid := asFound(c.URL)
			allowed := true
			if valid {
				allowed, _ = robots.Parse(body).Test(c.Agent, p)
			}
			ok, got = valid && allowed == c.Allowed, allowed
		case "path":
			p, _ := asFound(c.URL)
			ok, got = p == c.Path, p
		case "valid_agent":
			_, err := config.Parse("crawl.yaml", []byte("user_agent: "+strconvQuote(c.Agent)+"\nsources: [{name: s, start_urls: [\"http://example.test/\"]}]\n"))
			ok, got = (err == nil) == c.Valid, err
		case "sitemaps":
			sm := robots.Parse([]byte(c.Robots)).Sitemaps()
			ok, got = slices.Equal(sm, c.Sitemaps), sm
		default:
			t.Errorf("%s: unknown kind %q", c.ID, c.Kind)
			continue
		}
		if ok {
			continue
		}
		if c.Class == "google-specific" {
			differ[c.ID] = true
			if _, listed := googleOnly[c.ID]; !listed {
				t.Errorf("%s (%s, Google's reading): got %v; %s", c.ID, c.Kind, got, c.Why)
			}
			continue
		}
		t.Errorf("%s (%s, RFC 9309): got %v; %s", c.ID, c.Kind, got, c.Why)
	}
	for id, why := range googleOnly {
		if !differ[id] {
			t.Errorf("%s agrees with Google now: take it off the list (%s)", id, why)
		}
	}
	t.Logf("%d cases run, %d not applicable, %d of Google's own reading answered otherwise", ran, skipped, len(differ))
	if ran < 150 {
		t.Errorf("only %d cases ran: is google_robots_cases.json whole?", ran)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
