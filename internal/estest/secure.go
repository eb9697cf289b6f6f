package estest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvSecureURL names the variable holding the secured node's HTTPS URL, and EnvSecureDir the
// directory scripts/elasticsearch made its CA, certificates and users' passwords in
// (`scripts/elasticsearch secure-dir`); scripts/test sets both.
const (
	EnvSecureURL = "CRAWLSPACE_ES_SECURE_URL"
	EnvSecureDir = "CRAWLSPACE_ES_SECURE_DIR"
)

// WriterRole is the role of the file-realm user crawlspace writes as; tests define it with
// Secured.SetRole.
const WriterRole = "crawlspace_writer"

// Secured is the secured node: TLS on HTTP with a CA of its own, and the file realm.
type Secured struct {
	URL string
	// CAFile is the CA certificate that signed the node's, as elasticsearch.ca_file takes it.
	CAFile string
	// User and Password are the file-realm user with WriterRole, the one crawlspace is given.
	User, Password string

	admin     node
	rolesFile string
}

// roleMu serialises the tests of a binary that change roles.yml: the node has one, and the role
// they change is the same.
var roleMu sync.Mutex

// Secure returns the secured node, or skips the test where none is configured (fails under CI).
// The test holds the node's roles.yml until it ends; it starts with WriterRole granted nothing.
func Secure(t testing.TB) *Secured {
	t.Helper()
	base, dir := strings.TrimRight(os.Getenv(EnvSecureURL), "/"), os.Getenv(EnvSecureDir)
	if base == "" || dir == "" {
		if inCI() {
			t.Fatalf("the secured Elasticsearch node is required in CI: set %s and %s (scripts/test does)", EnvSecureURL, EnvSecureDir)
		}
		t.Skipf("no secured Elasticsearch node (%s and %s unset); scripts/test starts one", EnvSecureURL, EnvSecureDir)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("secured node: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	s := &Secured{
		URL:       base,
		CAFile:    filepath.Join(dir, "certs", "ca.crt"),
		User:      "crawlspace",
		Password:  read("crawlspace.password"),
		rolesFile: filepath.Join(filepath.Dir(dir), "config", "roles.yml"),
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(read("certs/ca.crt"))) {
		t.Fatalf("secured node: no certificate in %s", s.CAFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	s.admin = node{base: base, client: &http.Client{Timeout: 30 * time.Second, Transport: tr},
		user: "crawlspace-admin", password: read("crawlspace-admin.password")}
	if err := s.admin.do(http.MethodGet, "/_cluster/health", nil, nil); err != nil {
		if inCI() {
			t.Fatalf("secured Elasticsearch node: %v", err)
		}
		t.Skipf("secured Elasticsearch node not reachable: %v", err)
	}
	roleMu.Lock()
	t.Cleanup(roleMu.Unlock)
	s.SetRole(t, "", nil)
	return s
}

// Index is estest.Index on the secured node: a fresh name, and everything under it deleted when
// the test ends.
func (s *Secured) Index(t testing.TB) string {
	t.Helper()
	name := IndexName(t.Name())
	t.Cleanup(func() {
		if err := s.admin.deleteAll(name); err != nil {
			t.Errorf("estest cleanup of %s*: %v", name, err)
		}
	})
	return name
}

// Admin sends a request as the node's superuser, for what a test sets up or checks; out, if not
// nil, receives the JSON answer.
func (s *Secured) Admin(t testing.TB, method, path string, body any, out any) {
	t.Helper()
	if err := s.admin.do(method, path, body, out); err != nil {
		t.Fatal(err)
	}
}

// SetRole rewrites roles.yml so WriterRole holds privileges on the indices matching pattern (none
// when privileges is empty), and waits until the node has reloaded it: the writer's own
// _has_privileges must answer for every privilege named now or before as the new role says.
func (s *Secured) SetRole(t testing.TB, pattern string, privileges []string) {
	t.Helper()
	s.SetRoleWritingElsewhere(t, pattern, privileges, "")
}

// SetRoleWritingElsewhere is SetRole with write granted on the indices matching elsewhere too
// (none when it is empty): a user who may write somewhere gets a _bulk request through and has
// its items refused one by one, where a user who may write nowhere has the request refused whole.
func (s *Secured) SetRoleWritingElsewhere(t testing.TB, pattern string, privileges []string, elsewhere string) {
	t.Helper()
	var y strings.Builder
	fmt.Fprintf(&y, "# Written by a test (internal/estest).\n%s:\n  cluster: []\n", WriterRole)
	if len(privileges) > 0 || elsewhere != "" {
		y.WriteString("  indices:\n")
	}
	if len(privileges) > 0 {
		q, _ := json.Marshal(pattern)
		p, _ := json.Marshal(privileges)
		fmt.Fprintf(&y, "    - names: [%s]\n      privileges: %s\n", q, p)
	}
	if elsewhere != "" {
		q, _ := json.Marshal(elsewhere)
		fmt.Fprintf(&y, "    - names: [%s]\n      privileges: [write]\n", q)
	}
	tmp := s.rolesFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.rolesFile); err != nil {
		t.Fatal(err)
	}
	if pattern == "" {
		return
	}
	check := slices.Clone(privileges)
	for _, p := range []string{"write", "manage", "index", "delete", "create_index", "view_index_metadata", "maintenance"} {
		if !slices.Contains(check, p) {
			check = append(check, p)
		}
	}
	writer := s.admin
	writer.user, writer.password = s.User, s.Password
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last any
	for ctx.Err() == nil {
		var answer struct {
			Index map[string]map[string]bool `json:"index"`
		}
		err := writer.do(http.MethodPost, "/_security/user/_has_privileges",
			map[string]any{"index": []any{map[string]any{"names": []string{pattern}, "privileges": check}}}, &answer)
		if err == nil {
			got := answer.Index[pattern]
			ok := true
			for _, p := range privileges {
				ok = ok && got[p]
			}
			// A privilege named but not granted must be gone, unless another granted implies it.
			if ok && !implied(privileges, got) {
				return
			}
			last = got
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the node did not reload roles.yml (%s on %s); last answer %v", privileges, pattern, last)
}

// implied reports whether the answer shows a privilege that privileges neither names nor implies
// still held: the node still runs the old role.
func implied(privileges []string, got map[string]bool) bool {
	implies := map[string][]string{
		"write":  {"index", "delete"},
		"manage": {"view_index_metadata", "maintenance", "create_index"},
	}
	for p, held := range got {
		if !held || slices.Contains(privileges, p) {
			continue
		}
		covered := false
		for _, g := range privileges {
			covered = covered || slices.Contains(implies[g], p)
		}
		if !covered {
			return true
		}
	}
	return false
}

// node is a node the harness talks to over HTTP, with credentials when it is secured.
type node struct {
	base           string
	client         *http.Client
	user, password string
}

func (n node) request(method, path string, body any) (*http.Request, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(method, n.base+path, rd)
	} else {
		req, err = http.NewRequest(method, n.base+path, nil)
	}
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if n.user != "" {
		req.SetBasicAuth(n.user, n.password)
	}
	return req, nil
}
