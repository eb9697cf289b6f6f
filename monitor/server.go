package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
)

// Crawler is what the status page reads from the running crawler.
type Crawler interface {
	// Current is the running cycle's report, or the last one's.
	Current() *provider.Report
	// NextDiscovery is when a source's start URLs are next due.
	NextDiscovery(source string) (time.Time, error)
	// Paused are the sources paused (the control API), by name.
	Paused() map[string]provider.Pause
}

// Server serves /metrics, the status page (/) and its data (/status.json),
// and the control API beside them, on the service's address.
type Server struct {
	cfg     *config.Config
	crawler Crawler
	metrics *Metrics
	states  *States
	version string
	log     *slog.Logger
	// Now is the crawler's clock, which the page and the readiness probe
	// read; NewServer sets time.Now. Set it before Start.
	Now func() time.Time

	mu        sync.Mutex
	last      *provider.Report
	lastErr   string
	cycles    int
	nextCycle time.Time
	cluster   ClusterViewer // nil unless the state is shared

	srv *http.Server
}

// NewServer prepares the server; Start listens.
func NewServer(cfg *config.Config, c Crawler, m *Metrics, states *States, version string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, crawler: c, metrics: m, states: states, version: version, log: log, Now: time.Now}
}

// Handler routes the server's pages.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry(), promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}}))
	mux.HandleFunc("GET /status.json", s.serveJSON)
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	mux.HandleFunc("GET /{$}", s.servePage)
	return mux
}

// serveHealthz answers a liveness probe: the process runs and serves. The
// failures the service cannot get past (a state store that cannot record
// or is damaged, a shared one unreachable for five minutes) end the
// process instead, with exit 1, for its supervisor to start it again.
func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// serveReadyz answers a readiness probe: 200 when the service can do its
// work now, else 503 with a line per reason (NotReady).
func (s *Server) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	reasons := s.NotReady(s.Now())
	if len(reasons) == 0 {
		io.WriteString(w, "ok\n")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	for _, r := range reasons {
		fmt.Fprintf(w, "not ready: %s\n", r)
	}
}

// indexWatcher is a crawler that knows whether the index takes its writes.
type indexWatcher interface {
	// IndexUnavailableSince is zero while the writes land.
	IndexUnavailableSince() time.Time
}

// NotReady says why the service cannot do its work at now, none when it
// can. The state store is open whenever the server serves (it starts
// after the store opens and stops before it closes); what may fail
// meanwhile is the cluster the shared state lives in, whose lease rounds
// this process must renew within cluster.lease_ttl, and the index the
// documents go to.
func (s *Server) NotReady(now time.Time) []string {
	var out []string
	s.mu.Lock()
	cluster := s.cluster
	s.mu.Unlock()
	if cluster != nil {
		ttl := s.cfg.Cluster.LeaseTTL.D()
		switch at := cluster.Cluster().At; {
		case at.IsZero():
			out = append(out, "the shared state has not been read yet")
		case now.Sub(at) > ttl:
			out = append(out, fmt.Sprintf("the shared state was last read %s ago, longer than cluster.lease_ttl (%s): this process's lease rounds fail",
				now.Sub(at).Round(time.Second), short(ttl)))
		}
	}
	if iw, ok := s.crawler.(indexWatcher); ok {
		if since := iw.IndexUnavailableSince(); !since.IsZero() {
			out = append(out, fmt.Sprintf("Elasticsearch has taken no document write since %s (%s ago); they are retried until they land",
				since.UTC().Format(time.RFC3339), now.Sub(since).Round(time.Second)))
		}
	}
	return out
}

// Start listens on addr (port 0 picks a free one) and serves in the
// background, api (the control API, nil for none) under /api/; it returns
// the address listened on. webConfig is a web configuration file of
// Prometheus' exporter toolkit ("" for none): its TLS and basic auth cover
// the whole address, read again for each connection and request, as the
// toolkit does.
func (s *Server) Start(addr, webConfig string, api http.Handler) (net.Addr, error) {
	if err := web.Validate(webConfig); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := s.Handler()
	if api != nil {
		mux := http.NewServeMux()
		mux.Handle("/", h)
		mux.Handle("/api/", api)
		h = mux
	}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	flags := &web.FlagConfig{WebConfigFile: &webConfig}
	// The toolkit says whether TLS is on at every start: at debug level.
	quiet := slog.New(debugOnly{s.log.Handler()})
	go func() {
		if err := web.Serve(ln, s.srv, flags, quiet); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics and status server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ln.Addr(), nil
}

// debugOnly lowers a handler's records to debug level.
type debugOnly struct{ slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, l slog.Level) bool {
	if l >= slog.LevelError {
		return d.Handler.Enabled(ctx, l)
	}
	return d.Handler.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		return d.Handler.Handle(ctx, r)
	}
	r.Level = slog.LevelDebug
	return d.Handler.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.Handler.WithAttrs(as)} }
func (d debugOnly) WithGroup(g string) slog.Handler       { return debugOnly{d.Handler.WithGroup(g)} }

// Shutdown stops serving, letting requests in progress finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// CycleDone records a finished cycle for the page and the metrics: its
// report, its error, and when the service wakes next.
func (s *Server) CycleDone(r *provider.Report, err error, nextCycle time.Time) {
	next := map[string]time.Time{}
	for i := range s.cfg.Sources {
		name := s.cfg.Sources[i].Name
		if t, derr := s.crawler.NextDiscovery(name); derr == nil {
			next[name] = t
		}
	}
	s.metrics.CycleDone(r, err != nil, next)
	if s.states != nil {
		s.states.Kick()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r != nil {
		s.last = r.Clone()
		s.cycles++
	}
	s.lastErr = ""
	if err != nil {
		s.lastErr = err.Error()
	}
	s.nextCycle = nextCycle
}

// slogPrinter lets promhttp log through slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Error("metrics", "err", v) }

// View is what the status page shows; /status.json serves it as is.
type View struct {
	Version   string       `json:"version"`
	Now       time.Time    `json:"now"`
	Running   bool         `json:"cycle_running"`
	Cycles    int          `json:"cycles_finished"`
	NextCycle time.Time    `json:"next_cycle,omitzero"`
	LastError string       `json:"last_error,omitempty"`
	Sources   []SourceView `json:"sources"`
	// Current is the running cycle's report, or the last one's.
	Current *provider.Report `json:"current"`
	// Last is the last finished cycle's report.
	Last *provider.Report `json:"last_cycle,omitempty"`
	// Reasons are the last finished cycle's reasons (the running one's
	// before any finished), with their example URLs.
	Reasons []ReasonView `json:"reasons"`
	// Counted is when the state store was last counted.
	Counted time.Time `json:"counted,omitzero"`
	// Cluster is the processes sharing the crawl, when they do.
	Cluster *ClusterView `json:"cluster,omitempty"`
}

// SourceView is one source on the status page.
type SourceView struct {
	Name string `json:"name"`
	// Cycle holds the running cycle's counts.
	Cycle   provider.Counts `json:"cycle"`
	Elapsed float64         `json:"elapsed_seconds"`
	// StoreView holds the source's URLs in the state store, from the
	// last count.
	StoreView
	NextDiscovery time.Time `json:"next_discovery,omitzero"`
	DiscoveryDue  bool      `json:"discovery_due"`
	// Paused says since when the source is paused and who asked, when it is.
	Paused   *provider.Pause `json:"paused,omitempty"`
	MaxAge   string          `json:"max_age,omitempty"`
	Interval string          `json:"discovery_interval"`
	// DeletesHeld is what the source's hold_deletes holds (absent: none).
	DeletesHeld *provider.HeldDeletes `json:"deletes_held,omitempty"`
}

// heldReader is a crawler that says what each source's delete guard
// holds (provider.Crawler).
type heldReader interface {
	HeldDeletes(source string) (*provider.HeldDeletes, error)
}

// ReasonView is one reason of a report, with its examples.
type ReasonView struct {
	Reason   string             `json:"reason"`
	Count    int                `json:"count"`
	Examples []provider.Example `json:"examples"`
}

// View gathers the page's data now.
func (s *Server) View() View {
	now := s.Now()
	v := View{Version: s.version, Now: now.UTC()}
	s.mu.Lock()
	v.Cycles, v.NextCycle, v.LastError = s.cycles, s.nextCycle, s.lastErr
	if s.last != nil {
		v.Last = s.last
	}
	cluster := s.cluster
	s.mu.Unlock()
	if cluster != nil {
		v.Cluster = clusterView(s.cfg.Cluster.StateIndex, cluster.Cluster())
	}
	if cur := s.crawler.Current(); cur != nil {
		v.Current = cur.Clone()
		v.Running = v.Current.Finished.IsZero() && !v.Current.Started.IsZero()
	}
	var snap *Snapshot
	if s.states != nil {
		snap = s.states.Get()
	}
	if snap != nil {
		v.Counted = snap.At
	}
	var paused map[string]provider.Pause
	if s.crawler != nil {
		paused = s.crawler.Paused()
	}
	for i := range s.cfg.Sources {
		sc := &s.cfg.Sources[i]
		sv := SourceView{Name: sc.Name, Interval: short(sc.DiscoveryInterval.D())}
		if p, ok := paused[sc.Name]; ok {
			sv.Paused = &p
		}
		if sc.MaxAge > 0 {
			sv.MaxAge = short(sc.MaxAge.D())
		}
		if v.Current != nil {
			if c := v.Current.Sources[sc.Name]; c != nil {
				sv.Cycle = *c
			}
			end := now
			if !v.Current.Finished.IsZero() {
				end = v.Current.Finished
			}
			sv.Elapsed = end.Sub(v.Current.Started).Seconds()
		}
		var st *SourceState
		if snap != nil {
			st = snap.Sources[sc.Name]
		}
		sv.StoreView = st.View()
		if t, err := s.crawler.NextDiscovery(sc.Name); err == nil {
			sv.NextDiscovery = t
			sv.DiscoveryDue = !t.After(now)
		}
		if h, ok := s.crawler.(heldReader); ok {
			sv.DeletesHeld, _ = h.HeldDeletes(sc.Name)
		}
		v.Sources = append(v.Sources, sv)
	}
	src := v.Last
	if src == nil {
		src = v.Current
	}
	if src != nil {
		v.Reasons = reasons(src)
	}
	return v
}

// short writes a configured duration as people do: 1h, 48h, 1h30m.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// reasons lists a report's reasons, most frequent first, with examples.
func reasons(r *provider.Report) []ReasonView {
	out := make([]ReasonView, 0, len(r.Total.Reasons))
	for reason, n := range r.Total.Reasons {
		rv := ReasonView{Reason: reason, Count: n}
		for _, e := range r.Examples {
			if e.Reason == reason {
				rv.Examples = append(rv.Examples, e)
			}
		}
		out = append(out, rv)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

func (s *Server) serveJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.View()); err != nil {
		s.log.Debug("status.json not sent", "err", err)
	}
}
