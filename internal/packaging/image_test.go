package packaging

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/estest"
	"golang.org/x/sys/unix"
)

// The image's user, its configuration file and its volume (docs/deploying.md).
const (
	imageUID        = 65532
	imageConfigFile = "/etc/crawlspace/crawlspace.yaml"
)

func releasedImage(t *testing.T) string {
	return filepath.Join(releaseDir(t), "crawlspace-"+testVersion+"-linux-"+arch+".oci.tar")
}

// The image from scratch holds the released binary, the user, the CA
// certificates and the folders it runs in, and nothing else; its config
// runs `crawlspace run` on the mounted file as that user, in /state.
func TestImageHoldsTheReleasedBinaryItsUserCertificatesAndNothingElse(t *testing.T) {
	t.Parallel()
	img := readOCIArchive(t, releasedImage(t))
	if img.refName != "crawlspace:"+testVersion {
		t.Errorf("named %q, want crawlspace:%s", img.refName, testVersion)
	}
	c := img.config
	if c.Architecture != arch || c.OS != "linux" || c.Created != testDate {
		t.Errorf("platform %s/%s created %s, want linux/%s created %s", c.OS, c.Architecture, c.Created, arch, testDate)
	}
	cc := c.Config
	if cc.User != fmt.Sprintf("%d:%d", imageUID, imageUID) {
		t.Errorf("user %q", cc.User)
	}
	if !slices.Equal(cc.Entrypoint, []string{"/usr/bin/crawlspace"}) || !slices.Equal(cc.Cmd, []string{"run", "-config", imageConfigFile}) {
		t.Errorf("entrypoint %q, cmd %q", cc.Entrypoint, cc.Cmd)
	}
	if _, ok := cc.Volumes["/state"]; !ok || len(cc.Volumes) != 1 || cc.WorkingDir != "/state" || cc.StopSignal != "SIGTERM" {
		t.Errorf("volumes %v, working dir %q, stop signal %q", cc.Volumes, cc.WorkingDir, cc.StopSignal)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":    "crawlspace",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": gitHead(t),
		"org.opencontainers.image.created":  testDate,
		"org.opencontainers.image.source":   "https://github.com/crawlspace/crawlspace",
	} {
		if cc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cc.Labels[k], v)
		}
	}
	if cc.Labels["org.opencontainers.image.licenses"] == "" {
		t.Error("no org.opencontainers.image.licenses label")
	}

	var names []string
	for name := range img.files {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"etc", "etc/crawlspace", "etc/group", "etc/nsswitch.conf", "etc/passwd", "etc/ssl", "etc/ssl/certs",
		"etc/ssl/certs/ca-certificates.crt", "state", "tmp", "usr", "usr/bin", "usr/bin/crawlspace"}
	if !slices.Equal(names, want) {
		t.Errorf("the image holds\n %v\nwant\n %v", names, want)
	}
	for _, f := range []struct {
		name string
		mode int64 // permission bits with setuid, setgid and sticky
		uid  int
		dir  bool
	}{
		{"usr/bin/crawlspace", 0o755, 0, false},
		{"etc/passwd", 0o644, 0, false},
		{"etc/crawlspace", 0o755, 0, true},
		{"state", 0o750, imageUID, true},
		{"tmp", 0o1777, 0, true},
	} {
		h := img.files[f.name]
		if h == nil {
			continue
		}
		if got := h.hdr.Mode & 0o7777; got != f.mode || h.hdr.Uid != f.uid || (h.hdr.Typeflag == '5') != f.dir {
			t.Errorf("%s: mode %o, uid %d, type %c; want mode %o, uid %d", f.name, got, h.hdr.Uid, h.hdr.Typeflag, f.mode, f.uid)
		}
	}
	if bin := img.files["usr/bin/crawlspace"]; bin != nil {
		sum := sha256.Sum256(bin.data)
		if got, want := hex.EncodeToString(sum[:]), fileSHA256(t, releasedBinary(t)); got != want {
			t.Errorf("/usr/bin/crawlspace has SHA-256 %s, the released binary %s", got, want)
		}
	}
	if p := img.files["etc/passwd"]; p == nil || !strings.Contains(string(p.data), fmt.Sprintf("\ncrawlspace:x:%d:%d:", imageUID, imageUID)) {
		t.Errorf("/etc/passwd has no user crawlspace %d: %q", imageUID, p.data)
	}
	if ca := img.files["etc/ssl/certs/ca-certificates.crt"]; ca != nil {
		if n := countCertificates(t, ca.data); n < 100 {
			t.Errorf("the CA bundle holds %d certificates", n)
		}
	}
}

// countCertificates parses every PEM block as Go's TLS would.
func countCertificates(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return n
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n+1, err)
		}
		n++
	}
}

// podman is the command line of podman with a store of the test's own,
// removed with it. Where podman or runc is missing the test skips, and
// fails under CI (scripts/test installs both).
func podman(t *testing.T) []string {
	t.Helper()
	for _, tool := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "%s is not installed: apt-get install podman runc, or run scripts/test", tool)
		}
	}
	// Not t.TempDir: podman takes a runroot of at most 50 characters.
	store, err := os.MkdirTemp("", "cs-podman-")
	if err != nil {
		t.Fatal(err)
	}
	// The vfs driver mounts nothing, so the store goes with the folder.
	cmd := []string{"podman", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}
	t.Cleanup(func() {
		exec.Command(cmd[0], append(cmd[1:], "rm", "--all", "--force")...).Run()
		exec.Command(cmd[0], append(cmd[1:], "rmi", "--all", "--force")...).Run()
		if err := os.RemoveAll(store); err != nil {
			t.Errorf("removing podman's store: %v", err)
		}
	})
	return cmd
}

// runFlags are what `podman run` needs on this machine, a container
// itself: runc, since crun refuses its hybrid cgroup hierarchy ("cgroups
// in hybrid mode not supported"); limits no higher than its own, since
// without CAP_SYS_RESOURCE the runtime cannot raise them to the 1048576
// files and processes podman asks for as root ("setrlimit RLIMIT_NOFILE:
// Operation not permitted"); and the host's network, where the node and
// the site listen on loopback.
func runFlags(t *testing.T) []string {
	t.Helper()
	var files, procs unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &files); err != nil {
		t.Fatal(err)
	}
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &procs); err != nil {
		t.Fatal(err)
	}
	nproc := min(procs.Max, 4096)
	return []string{"--runtime", "runc", "--network", "host",
		"--ulimit", fmt.Sprintf("nofile=%d:%d", files.Max, files.Max),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", nproc, nproc)}
}

// containerLog follows a container's output line by line and says when
// a line holds a text.
type containerLog struct {
	mu    sync.Mutex
	lines []string
	seen  map[string]chan struct{} // by text; closed once a line holds it; never written after newContainerLog
}

func newContainerLog(r io.Reader, waitFor ...string) *containerLog {
	l := &containerLog{seen: map[string]chan struct{}{}}
	pending := map[string]chan struct{}{}
	for _, s := range waitFor {
		l.seen[s] = make(chan struct{})
		pending[s] = l.seen[s]
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
			for s, ch := range pending {
				if strings.Contains(sc.Text(), s) {
					close(ch)
					delete(pending, s)
				}
			}
		}
	}()
	return l
}

func (l *containerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// running is a `podman run` in the foreground, its log and its end.
type running struct {
	cmd    *exec.Cmd
	log    *containerLog
	exited chan struct{}
	err    error
}

// await waits for ch, failing with the container's log when the
// container ends first, or shortly before go test's -timeout.
func (r *running) await(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-r.exited:
		t.Fatalf("the container ended (%v) before %s:\n%s", r.err, what, r.log)
	case <-ctx.Done():
		t.Fatalf("no %s before the test's deadline:\n%s", what, r.log)
	}
}

// testContext ends a minute before go test's -timeout, so a test that
// waits on a container fails with its log rather than a bare panic.
func testContext(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// The image runs as the service an operator starts: its default command,
// as the user of its config, as PID 1, with the configuration mounted at
// /etc/crawlspace/crawlspace.yaml and a host folder as /state. It crawls
// the demo site (pages, the PDF, Word and Excel files, read by the static
// binary's own readers) into the real node, writes its state as that
// user, and SIGTERM stops it with exit code 0.
func TestImageCrawlsTheDemoSiteIntoTheNodeAsItsUserAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	archive := releasedImage(t)
	pod := podman(t)
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(repoRoot, "testdata", "site"))))
	t.Cleanup(site.Close)

	dir := t.TempDir()
	config := filepath.Join(dir, "crawlspace.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
state_dir: /state
allow_private_networks: true
sources:
  - name: demo
    start_urls: [%q]
    politeness: {delay: 0s, max_parallel_per_host: 4}
`, esURL, index, site.URL+"/"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, imageUID, imageUID); err != nil {
		skipOrFail(t, "cannot give the state folder to the image's user %d (%v): run as root", imageUID, err)
	}

	name := "crawlspace-test-" + strconv.Itoa(os.Getpid())
	args := append(pod[1:], "run", "--quiet", "--name", name)
	args = append(args, runFlags(t)...)
	args = append(args, "-v", config+":"+imageConfigFile+":ro", "-v", state+":/state", "oci-archive:"+archive)
	r := &running{cmd: exec.Command(pod[0], args...), exited: make(chan struct{})}
	out, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = r.cmd.Stderr
	r.log = newContainerLog(out, `msg="next cycle"`, "msg=stopping")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		exec.Command(pod[0], append(pod[1:], "rm", "--force", name)...).Run()
		<-r.exited
	})
	ctx := testContext(t)
	start := time.Now()

	r.await(t, ctx, r.log.seen[`msg="next cycle"`], "the end of the first cycle")
	t.Logf("the container started and crawled the site in %s", time.Since(start).Round(100*time.Millisecond))
	checkIndexed(t, esURL, index, site.URL)
	pid := inspectPID(t, pod, name)
	checkProcess(t, pid)
	checkStateOwnedByTheUser(t, state)

	stopped := r.log.seen["msg=stopping"]
	stop := time.Now()
	if out, err := exec.Command(pod[0], append(pod[1:], "kill", "--signal", "TERM", name)...).CombinedOutput(); err != nil {
		t.Fatalf("podman kill --signal TERM: %v\n%s", err, out)
	}
	r.await(t, ctx, stopped, `"stopping" after SIGTERM`)
	select {
	case <-r.exited:
	case <-ctx.Done():
		t.Fatalf("still running after SIGTERM and its \"stopping\" line:\n%s", r.log)
	}
	t.Logf("stopped %s after SIGTERM", time.Since(stop).Round(100*time.Millisecond))
	if r.err != nil {
		t.Errorf("podman run ended with %v after SIGTERM, want exit code 0:\n%s", r.err, r.log)
	}
}

// checkIndexed finds the demo site's pages and documents in the index:
// the 15 that provider's TestCrawlIntoElasticsearchIndexesExactlyTheReachablePages
// names, among them the PDF (PDFium compiled to WebAssembly, no cgo) and
// the Word and Excel files.
func checkIndexed(t *testing.T, esURL, index, siteURL string) {
	t.Helper()
	titles := map[string]string{}
	for _, doc := range estest.Documents[docfields.Document](t, esURL, index) {
		titles[doc.URL] = doc.Title
	}
	if len(titles) != 15 {
		t.Errorf("the index holds %d documents, want the 15 of the demo site: %v", len(titles), titles)
	}
	for path, title := range map[string]string{
		"/":                                "Northwind Intranet",
		"/docs/ordering-client-manual.pdf": "Ordering Client Manual",
		"/docs/branch-price-list.docx":     "Branch Price List 2026",
		"/news/2026/delivery-figures.xlsx": "delivery figures", // the file's name: the workbook has no title
	} {
		if got, ok := titles[siteURL+path]; !ok || got != title {
			t.Errorf("%s: title %q (indexed: %v), want %q", path, got, ok, title)
		}
	}
}

func inspectPID(t *testing.T, pod []string, name string) int {
	t.Helper()
	out, err := exec.Command(pod[0], append(pod[1:], "inspect", "--format", "{{.State.Pid}}", name)...).Output()
	if err != nil {
		t.Fatalf("podman inspect: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		t.Fatalf("podman inspect gave pid %q", out)
	}
	return pid
}

// checkProcess reads the container's process from the host: crawlspace,
// PID 1 in its namespace, as the image's user.
func checkProcess(t *testing.T, pid int) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string][]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.Fields(v)
		}
	}
	uid := strconv.Itoa(imageUID)
	if got := fields["Name"]; !slices.Equal(got, []string{"crawlspace"}) {
		t.Errorf("the container runs %v, want crawlspace", got)
	}
	if got := fields["NSpid"]; len(got) < 2 || got[len(got)-1] != "1" {
		t.Errorf("NSpid %v: crawlspace is not PID 1 in the container", got)
	}
	if got := fields["Uid"]; !slices.Equal(got, []string{uid, uid, uid, uid}) {
		t.Errorf("runs as uid %v, want %s", got, uid)
	}
}

// checkStateOwnedByTheUser: the service wrote its state into the volume,
// as the image's user.
func checkStateOwnedByTheUser(t *testing.T, state string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == state {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st := info.Sys().(*syscall.Stat_t); st.Uid != imageUID {
			t.Errorf("%s is owned by uid %d, want %d", p, st.Uid, imageUID)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("nothing written to /state")
	}
}
