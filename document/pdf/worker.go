package pdf

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"

	"github.com/crawlspace/crawlspace/document"
)

// PDFium runs in worker processes: the same executable started again
// with workerEnv set. wazero can stop a call in flight only when built
// with WithCloseOnContextDone, which triples PDFium's CPU time; a process
// is stopped at full speed by killing it, which also frees all it holds
// and keeps a crash of any kind out of the crawler.
const (
	workerEnv = "CRAWLSPACE_PDF_WORKER"
	cacheEnv  = "CRAWLSPACE_PDF_CACHE"
	// maxFrame bounds a frame: a file is refused well below it.
	maxFrame = 1 << 30
)

type response struct {
	Content *document.Content
	Reason  string // set on failure
	Message string
}

// Worker serves PDF reads on stdin and stdout and exits if this process
// was started as a Reader's worker; otherwise it returns at once. A
// program that reads PDFs calls it first thing in main, and a test binary
// in TestMain.
func Worker() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	os.Exit(serve(os.Stdin, os.Stdout, os.Getenv(cacheEnv)))
}

func serve(in io.Reader, out io.Writer, cacheDir string) int {
	// One read at a time: the parent runs as many workers as it reads
	// files at once.
	sb := newSandbox(Config{CacheDir: cacheDir, Instances: 1})
	defer sb.Close()
	br, bw := bufio.NewReader(in), bufio.NewWriter(out)
	for {
		var lim document.Limits
		data, err := readRequest(br, &lim)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0 // the parent closed the pipe or is gone
			}
			fmt.Fprintln(os.Stderr, "pdf worker:", err)
			return 2
		}
		c, err := sb.Read(context.Background(), data, lim)
		data = nil
		resp := response{Content: c}
		if err != nil {
			resp.Content, resp.Reason, resp.Message = nil, document.ReasonOf(err), errMessage(err)
			if resp.Reason == "" {
				resp.Reason = document.ReasonFailed
			}
		}
		if err := writeFrame(bw, &resp); err != nil {
			fmt.Fprintln(os.Stderr, "pdf worker:", err)
			return 2
		}
	}
}

// errMessage is what a document.Error wraps, which the parent wraps again.
func errMessage(err error) string {
	var de *document.Error
	if errors.As(err, &de) && de.Err != nil {
		return de.Err.Error()
	}
	return err.Error()
}

// A request is a frame of the limits and then one of the file's bytes as
// they are: gob would copy a file of many MB once more on each side.
func writeRequest(w *bufio.Writer, lim document.Limits, data []byte) error {
	if err := writeFrame(w, &lim); err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	w.Write(n[:])
	w.Write(data)
	return w.Flush()
}

func readRequest(r io.Reader, lim *document.Limits) ([]byte, error) {
	if err := readFrame(r, lim); err != nil {
		return nil, err
	}
	return readBytes(r)
}

func writeFrame(w *bufio.Writer, v any) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(b.Len()))
	w.Write(n[:])
	w.Write(b.Bytes())
	return w.Flush()
}

func readFrame(r io.Reader, v any) error {
	b, err := readBytes(r)
	if err != nil {
		return err
	}
	return gob.NewDecoder(bytes.NewReader(b)).Decode(v)
}

func readBytes(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// Reader reads PDF files in worker processes, each running PDFium in a
// sandbox. It is safe for concurrent use. No worker is started before the
// first Read: a crawl that meets no PDF pays nothing.
type Reader struct {
	cfg   Config
	slots chan struct{}

	mu      sync.Mutex
	idle    []*worker
	all     map[*worker]bool // every live worker, to kill at Close
	started int              // workers started, for tests
	closed  bool
	tmpDir  string // the cache made when Config has none
}

// NewReader is a Reader; see Config. Instances bounds the worker
// processes.
func NewReader(cfg Config) *Reader {
	if cfg.Instances <= 0 {
		cfg.Instances = runtime.GOMAXPROCS(0)
	}
	return &Reader{cfg: cfg, slots: make(chan struct{}, cfg.Instances), all: map[*worker]bool{}}
}

type worker struct {
	cmd    *exec.Cmd
	in     *bufio.Writer
	stdin  io.Closer
	out    *bufio.Reader
	stderr *tail
	waited chan struct{} // closed once cmd.Wait returned
}

// tail keeps the last bytes a worker wrote to stderr: a Go runtime crash
// says there why it died.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

func (r *Reader) start() (*worker, error) {
	if os.Getenv(workerEnv) != "" {
		// This process was started as a worker but its main did not
		// call Worker: starting another would only do the same again.
		return nil, errors.New("this program's main does not call pdf.Worker")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if r.cfg.CacheDir == "" && r.tmpDir == "" {
		// Without a shared cache every worker would compile PDFium.
		if r.tmpDir, err = os.MkdirTemp("", "crawlspace-pdfium-"); err != nil {
			r.tmpDir = ""
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), workerEnv+"=1", cacheEnv+"="+cmp.Or(r.cfg.CacheDir, r.tmpDir))
	cmd.SysProcAttr = sysProcAttr()
	w := &worker{cmd: cmd, stderr: &tail{}, waited: make(chan struct{})}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w.stdin, w.in, w.out = stdin, bufio.NewWriter(stdin), bufio.NewReader(stdout)
	go func() { cmd.Wait(); close(w.waited) }()
	return w, nil
}

// kill stops w and waits until it is reaped.
func (w *worker) kill() {
	w.cmd.Process.Kill()
	<-w.waited
}

// get is an idle worker or a new one.
func (r *Reader) get() (*worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("reader closed")
	}
	if n := len(r.idle); n > 0 {
		w := r.idle[n-1]
		r.idle = r.idle[:n-1]
		return w, nil
	}
	w, err := r.start()
	if err != nil {
		return nil, err
	}
	r.all[w] = true
	r.started++
	return w, nil
}

func (r *Reader) put(w *worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		go w.kill()
		return
	}
	r.idle = append(r.idle, w)
}

func (r *Reader) drop(w *worker) {
	w.kill()
	r.mu.Lock()
	delete(r.all, w)
	r.mu.Unlock()
}

// Read reads one PDF file in a worker. When ctx ends the worker is killed
// and Read returns at once.
func (r *Reader) Read(ctx context.Context, data []byte, lim document.Limits) (*document.Content, error) {
	lim = lim.WithDefaults()
	release, err := admit(ctx, r.slots, data, lim)
	if err != nil {
		return nil, err
	}
	defer release()
	w, err := r.get()
	if err != nil {
		return nil, &document.Error{Reason: document.ReasonFailed, Err: fmt.Errorf("pdf worker: %w", err)}
	}
	type result struct {
		resp response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		if res.err = writeRequest(w.in, lim, data); res.err == nil {
			res.err = readFrame(w.out, &res.resp)
		}
		done <- res
	}()
	select {
	case <-ctx.Done():
		r.drop(w)
		<-done // the pipes are closed: it returns now
		return nil, timeout(ctx.Err())
	case res := <-done:
		if res.err != nil {
			r.drop(w)
			msg := w.cmd.ProcessState.String()
			if s := w.stderr.String(); s != "" {
				msg += ": " + firstLine(s)
			}
			return nil, &document.Error{Reason: document.ReasonCorrupt, Err: fmt.Errorf("pdf worker died reading the file (%s): %w", msg, res.err)}
		}
		r.put(w)
		if res.resp.Reason != "" {
			return nil, &document.Error{Reason: res.resp.Reason, Err: errors.New(res.resp.Message)}
		}
		return res.resp.Content, nil
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Close kills every worker and waits until each is reaped.
func (r *Reader) Close() error {
	r.mu.Lock()
	r.closed = true
	ws := make([]*worker, 0, len(r.all))
	for w := range r.all {
		ws = append(ws, w)
	}
	r.all, r.idle = map[*worker]bool{}, nil
	dir := r.tmpDir
	r.tmpDir = ""
	r.mu.Unlock()
	for _, w := range ws {
		w.stdin.Close()
		w.kill()
	}
	if dir != "" {
		return os.RemoveAll(dir)
	}
	return nil
}
