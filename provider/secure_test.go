package provider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// writerPrivileges are the least crawlspace needs on its own indices (<alias>*): write for the
// documents, manage for creating the versioned index, refreshing it and moving the alias. No
// cluster privilege is needed. TestSecuredCrawlNeedsEachOfItsPrivileges finds each necessary.
var writerPrivileges = []string{"manage", "write"}

// securedConfig is a crawl of faultSite into the secured node as the writer user, over HTTPS
// verified against caFile.
func securedConfig(t *testing.T, sec *estest.Secured, index, site, caFile, password string) *config.Config {
	t.Helper()
	return crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms, bulk_workers: 1,
  ca_file: %q, username: %s, password: %q}
allow_private_networks: true
sources:
  - name: s
    start_urls: [%q]
`, sec.URL, index, caFile, sec.User, password, site+"/"))
}

// securedIDs are the ids the alias shows on the secured node.
func securedIDs(t *testing.T, sec *estest.Secured, index string) []string {
	t.Helper()
	var answer struct {
		Hits struct {
			Hits []struct {
				ID string `json:"_id"`
			} `json:"hits"`
		} `json:"hits"`
	}
	sec.Admin(t, http.MethodGet, "/"+index+"/_search?size=100", nil, &answer)
	ids := make([]string, 0, len(answer.Hits.Hits))
	for _, h := range answer.Hits.Hits {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestCrawlIntoASecuredNodeOverHTTPSAsAUserWhoseRoleMayWriteOnlyItsOwnIndices(t *testing.T) {
	sec := estest.Secure(t)
	index := sec.Index(t)
	sec.SetRole(t, index+"*", writerPrivileges)
	site := faultSite(t)
	c := crawltest.New(t, securedConfig(t, sec, index, site.URL, sec.CAFile, sec.Password))
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := securedIDs(t, sec, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if report.Total.IndexFailures != 0 {
		t.Errorf("report %+v, want no index failure", report.Total)
	}

	// The same role gives nothing outside the crawl's own indices.
	other := sec.Index(t)
	res := writerRequest(t, sec, http.MethodPut, "/"+other)
	if res != http.StatusForbidden {
		t.Errorf("the writer creating index %s outside its pattern: HTTP %d, want 403", other, res)
	}
}

// writerRequest sends a bodiless request as the writer and returns the status.
func writerRequest(t *testing.T, sec *estest.Secured, method, path string) int {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(sec.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs = pool
	req, _ := http.NewRequest(method, sec.URL+path, nil)
	req.SetBasicAuth(sec.User, sec.Password)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestSecuredCrawlNeedsEachOfItsPrivileges(t *testing.T) {
	sec := estest.Secure(t)
	for _, drop := range writerPrivileges {
		t.Run("without "+drop, func(t *testing.T) {
			index := sec.Index(t)
			var kept []string
			for _, p := range writerPrivileges {
				if p != drop {
					kept = append(kept, p)
				}
			}
			sec.SetRole(t, index+"*", kept)
			site := faultSite(t)
			cfg := securedConfig(t, sec, index, site.URL, sec.CAFile, sec.Password)
			set, err := rules.Compile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), slog.New(slog.DiscardHandler))
			if err != nil {
				// Refused before any write: without manage the index cannot be created.
				if !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "manage and write") {
					t.Errorf("opening a crawl without %s: %v, want a 403 naming the privileges needed", drop, err)
				}
				return
			}
			// No write can land: Close need not wait long before leaving them pending.
			provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
			t.Cleanup(func() { c.Close() })
			if drop == "manage" {
				t.Fatal("a crawler opened without manage, which creating its index needs")
			}
			// Without write every write is refused and retried: nothing lands.
			seen := newRetries()
			c.SetObserver(seen)
			ctx, cancel := context.WithCancel(context.Background())
			run := crawlInBackground(ctx, c)
			seen.await(t, 1)
			cancel()
			run.wait(t)
			if got := securedIDs(t, sec, index); len(got) != 0 {
				t.Errorf("without write %d documents landed", len(got))
			}
		})
	}
}

// openAndCrawl opens a crawler on cfg as the command does and crawls once, returning the first error.
func openAndCrawl(t *testing.T, cfg *config.Config) error {
	t.Helper()
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Crawl(context.Background())
	return err
}

// otherCA writes a CA certificate the node's certificate is not signed by.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the node's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSecuredNodeWithTheWrongCAFailsWithATLSErrorNamingTheCAFile(t *testing.T) {
	sec := estest.Secure(t)
	index := sec.Index(t)
	sec.SetRole(t, index+"*", writerPrivileges)
	site := faultSite(t)
	ca := otherCA(t)
	err := openAndCrawl(t, securedConfig(t, sec, index, site.URL, ca, sec.Password))
	if err == nil {
		t.Fatal("a crawl trusting another CA than the node's reached the node")
	}
	for _, want := range []string{"TLS", "elasticsearch.ca_file", ca, "unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestSecuredNodeWithTheWrongPasswordFailsWith401NamingTheUserAndNotThePassword(t *testing.T) {
	sec := estest.Secure(t)
	index := sec.Index(t)
	sec.SetRole(t, index+"*", writerPrivileges)
	site := faultSite(t)
	const wrong = "not-the-password-4f1d"
	err := openAndCrawl(t, securedConfig(t, sec, index, site.URL, sec.CAFile, wrong))
	if err == nil {
		t.Fatal("a crawl with the wrong password reached the node")
	}
	for _, want := range []string{"401", "elasticsearch.username", `"crawlspace"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("error %q shows the password", err)
	}
}

func TestRoleWithoutWriteDuringACrawlIsAClear403AndTheWritesWaitPendingUntilTheRoleIsFixed(t *testing.T) {
	// A user who may write nowhere has each _bulk request refused whole; one who may write to
	// other indices has it accepted and each item refused: both must keep the writes.
	for _, elsewhere := range []bool{false, true} {
		t.Run(fmt.Sprintf("write elsewhere %v", elsewhere), func(t *testing.T) { roleWithoutWrite(t, elsewhere) })
	}
}

func roleWithoutWrite(t *testing.T, elsewhere bool) {
	sec := estest.Secure(t)
	index := sec.Index(t)
	// manage alone: the index is created, every write is refused.
	other := ""
	if elsewhere {
		other = "other-" + index + "*"
	}
	sec.SetRoleWritingElsewhere(t, index+"*", []string{"manage"}, other)
	site := faultSite(t)
	cfg := securedConfig(t, sec, index, site.URL, sec.CAFile, sec.Password)
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, nil)))
	// The writes are refused until the test fixes the role: Close need not
	// wait long for them before leaving them pending.
	provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
	seen := newRetries()
	c.SetObserver(seen)
	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	seen.await(t, len(faultPages)+1)
	cancel()
	run.wait(t)
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	warned := log.lines("elasticsearch unavailable: index writes are retried until they land")
	if len(warned) != 1 || !strings.Contains(warned[0], "403") || !strings.Contains(warned[0], "unauthorized") {
		t.Errorf("warnings %q, want one naming the 403 and the unauthorized action", warned)
	}
	if n := len(log.lines("index write failed")); n != 0 {
		t.Errorf("%d writes refused for a missing privilege were logged as failed, not kept", n)
	}

	c = crawltest.New(t, cfg)
	if pending := noneLost(t, c, site.URL); len(pending) != len(faultPages)+1 {
		t.Errorf("after the crawl was stopped %d pages have writes pending, want all %d", len(pending), len(faultPages)+1)
	}
	sec.SetRole(t, index+"*", writerPrivileges)
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := securedIDs(t, sec, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("once the role was fixed the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if pending := noneLost(t, c, site.URL); len(pending) > 0 {
		t.Errorf("once the role was fixed %v still have writes pending", pending)
	}
}

// The role loses write while the crawl is under way: the pages written
// before keep their documents, those after are refused with one clear 403
// and wait in the pending store, and once the role is back every page is
// in the index and nothing was lost.
func TestARoleThatLosesWriteMidCrawlKeepsTheWritesPendingUntilItIsBack(t *testing.T) {
	sec := estest.Secure(t)
	index := sec.Index(t)
	sec.SetRole(t, index+"*", writerPrivileges)
	site := faultSite(t)
	// The sixth page is answered only once the role has lost write, which
	// the test goroutine does when the page is asked for.
	asked, revoked := make(chan struct{}), make(chan struct{})
	var once sync.Once
	site.handle("/p5", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked); <-revoked })
		htmlPage("page /p5", "<p>text of /p5</p>")(w, r)
	})
	cfg := securedConfig(t, sec, index, site.URL, sec.CAFile, sec.Password)
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, nil)))
	// The writes are refused until the test fixes the role: Close need not
	// wait long for them before leaving them pending.
	provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
	seen := newRetries()
	c.SetObserver(seen)
	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	select {
	case <-asked:
	case <-time.After(guard):
		t.Fatal("/p5 was never asked for")
	}
	sec.SetRole(t, index+"*", []string{"manage"})
	close(revoked)
	seen.await(t, 1)
	cancel()
	run.wait(t)
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	if warned := log.lines("elasticsearch unavailable: index writes are retried until they land"); len(warned) != 1 || !strings.Contains(warned[0], "403") {
		t.Errorf("warnings %q, want one naming the 403", warned)
	}

	c = crawltest.New(t, cfg)
	if pending := noneLost(t, c, site.URL); len(pending) == 0 {
		t.Error("no write was pending after the role lost write mid-crawl")
	}
	sec.SetRole(t, index+"*", writerPrivileges)
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := securedIDs(t, sec, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("once the role was back the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if pending := noneLost(t, c, site.URL); len(pending) > 0 {
		t.Errorf("once the role was back %v still have writes pending", pending)
	}
}
