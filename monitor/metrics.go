// Package monitor shows what a running crawlspace is doing: Prometheus
// metrics, a status page, and the live progress of a crawl.
//
// Metrics are fed by the crawler through provider.Observer, called where
// the crawl report counts, so the metrics and the report cannot disagree.
// Per-source counters are resolved once per source, so a count is an
// atomic add with no lock and no allocation; the frontier's size by state
// comes from a whole-store walk run in the background at most every few
// seconds (see States), never from a scrape.
package monitor

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

const namespace = "crawlspace"

// codeClasses are the status classes of crawlspace_pages_fetched_total.
var codeClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}

func codeClass(status int) int {
	if status >= 100 && status < 600 {
		return status/100 - 1
	}
	return len(codeClasses) - 1
}

// docOutcomes are the outcomes of crawlspace_documents_total.
var docOutcomes = [...]string{provider.DocCreated, provider.DocUpdated, provider.DocUnchanged,
	provider.DocDeleted, provider.DocWritten, provider.DocFailed}

func docIndex(outcome string) int {
	for i, o := range docOutcomes {
		if o == outcome {
			return i
		}
	}
	return -1
}

// Metrics is the crawler's Prometheus instrumentation. It implements
// provider.Observer.
type Metrics struct {
	reg *prometheus.Registry

	fetched   *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	documents *prometheus.CounterVec
	reasons   *prometheus.CounterVec
	errors    *prometheus.CounterVec
	retries   *prometheus.CounterVec

	bulkLatency  prometheus.Histogram
	bulkFailures prometheus.Counter

	cycles        prometheus.Counter
	cycleFailures prometheus.Counter
	cycleSeconds  prometheus.Gauge
	cycleEnd      prometheus.Gauge
	nextDiscovery *prometheus.GaugeVec
	orphans       *prometheus.GaugeVec
	orphansKept   *prometheus.GaugeVec
	deletesHeld   *prometheus.GaugeVec

	sources sync.Map // source name -> *sourceMetrics
}

// sourceMetrics are one source's series, resolved once.
type sourceMetrics struct {
	name    string
	m       *Metrics
	fetched [len(codeClasses)]prometheus.Counter
	docs    [len(docOutcomes)]prometheus.Counter
	bytes   prometheus.Counter
	latency prometheus.Observer
	errors  prometheus.Counter
	retries prometheus.Counter
	reasons sync.Map // reason -> prometheus.Counter
}

// NewMetrics registers the crawler's metrics, the Go runtime's and the
// process's, and the build information, in a registry of their own.
// sources are the configured source names, whose series start at zero.
func NewMetrics(version string, sources []string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(v)
		return v
	}
	m.fetched = counter("pages_fetched_total", "Responses received, by source and HTTP status class (1xx…5xx, other).", "source", "code")
	m.bytes = counter("fetch_bytes_total", "Response body bytes downloaded, by source.", "source")
	m.documents = counter("documents_total", "Document outcomes, by source: created, updated, unchanged, deleted, written (file sink), failed (rejected by the index).", "source", "outcome")
	m.reasons = counter("urls_by_reason_total", "URLs skipped, excluded or failed, by source and reason code (robots, rule and exclusion reasons, HTTP and network errors): the report's reasons.", "source", "reason")
	m.errors = counter("errors_total", "URLs that could not be fetched or indexed, by source.", "source")
	m.retries = counter("elasticsearch_retries_total", "Document writes sent to Elasticsearch again after a backoff (429, unreachable), by source.", "source")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "fetch_duration_seconds",
		Help:    "Time from request to the end of the response body, by source.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"source"})
	m.reg.MustRegister(m.latency)
	m.bulkLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "elasticsearch_bulk_duration_seconds",
		Help:    "Duration of _bulk requests. One request carries the documents of every source, so it has no source label.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}})
	m.bulkFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "elasticsearch_bulk_failures_total",
		Help: "_bulk requests that failed as a whole (no answer, or an error status); their documents are retried."})
	m.cycles = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "cycles_total", Help: "Crawl cycles finished."})
	m.cycleFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "cycle_failures_total", Help: "Crawl cycles that ended with an error (retried at the next wake-up)."})
	m.cycleSeconds = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "last_cycle_duration_seconds", Help: "Duration of the last finished cycle."})
	m.cycleEnd = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "last_cycle_end_timestamp_seconds", Help: "When the last cycle finished, in Unix seconds."})
	m.nextDiscovery = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "next_discovery_timestamp_seconds",
		Help: "When each source's start URLs, sitemaps and feeds are next visited, in Unix seconds."}, []string{"source"})
	m.orphans = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "orphans",
		Help: "Indexed pages no link reaches any more from the source's start URLs, sitemaps or feeds, as last found (at the end of a cycle that visited them and could decide)."}, []string{"source"})
	m.orphansKept = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "orphans_kept",
		Help: "Of those orphans, how many the source's orphans policy left in the index (keep, or recheck and still served)."}, []string{"source"})
	m.deletesHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "deletes_held",
		Help: "Deletes the source's hold_deletes holds: a cycle would have deleted more than its share of the source's documents; they stay in the index until the next cycle decides them again or an operator confirms them."}, []string{"source"})
	m.reg.MustRegister(m.bulkLatency, m.bulkFailures, m.cycles, m.cycleFailures, m.cycleSeconds, m.cycleEnd, m.nextDiscovery, m.orphans, m.orphansKept, m.deletesHeld)
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
		Help: "Build information; the value is 1.", ConstLabels: prometheus.Labels{"version": version}})
	info.Set(1)
	m.reg.MustRegister(info, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range sources {
		m.source(s)
		m.deletesHeld.WithLabelValues(s)
	}
	return m
}

// Registry is where the metrics are registered, to serve or to gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) source(name string) *sourceMetrics {
	if v, ok := m.sources.Load(name); ok {
		return v.(*sourceMetrics)
	}
	s := &sourceMetrics{name: name, m: m,
		bytes:   m.bytes.WithLabelValues(name),
		latency: m.latency.WithLabelValues(name),
		errors:  m.errors.WithLabelValues(name),
		retries: m.retries.WithLabelValues(name),
	}
	for i, c := range codeClasses {
		s.fetched[i] = m.fetched.WithLabelValues(name, c)
	}
	for i, o := range docOutcomes {
		s.docs[i] = m.documents.WithLabelValues(name, o)
	}
	v, _ := m.sources.LoadOrStore(name, s)
	return v.(*sourceMetrics)
}

func (s *sourceMetrics) reason(reason string) prometheus.Counter {
	if v, ok := s.reasons.Load(reason); ok {
		return v.(prometheus.Counter)
	}
	v, _ := s.reasons.LoadOrStore(reason, s.m.reasons.WithLabelValues(s.name, reason))
	return v.(prometheus.Counter)
}

// Fetched implements provider.Observer.
func (m *Metrics) Fetched(source string, status int, bytes int, took time.Duration) {
	s := m.source(source)
	s.fetched[codeClass(status)].Inc()
	s.bytes.Add(float64(bytes))
	s.latency.Observe(took.Seconds())
}

// Document implements provider.Observer.
func (m *Metrics) Document(source, outcome string) {
	if i := docIndex(outcome); i >= 0 {
		m.source(source).docs[i].Inc()
	}
}

// Reason implements provider.Observer.
func (m *Metrics) Reason(source, reason string, n int, isError bool) {
	s := m.source(source)
	s.reason(reason).Add(float64(n))
	if isError {
		s.errors.Add(float64(n))
	}
}

// IndexRetry implements provider.Observer.
func (m *Metrics) IndexRetry(source string) { m.source(source).retries.Inc() }

// Bulk implements provider.Observer.
func (m *Metrics) Bulk(took time.Duration, status int, err error) {
	m.bulkLatency.Observe(took.Seconds())
	if err != nil || status >= 300 {
		m.bulkFailures.Inc()
	}
}

// Orphans implements provider.Observer.
func (m *Metrics) Orphans(source string, found, kept int) {
	m.orphans.WithLabelValues(source).Set(float64(found))
	m.orphansKept.WithLabelValues(source).Set(float64(kept))
}

// DeletesHeld implements provider.Observer.
func (m *Metrics) DeletesHeld(source string, n int) {
	m.deletesHeld.WithLabelValues(source).Set(float64(n))
}

// CycleDone records a finished cycle and when each source is next discovered.
func (m *Metrics) CycleDone(r *provider.Report, failed bool, next map[string]time.Time) {
	if r != nil {
		m.cycles.Inc()
		m.cycleSeconds.Set(r.Seconds)
		m.cycleEnd.Set(float64(r.Finished.UnixNano()) / 1e9)
	}
	if failed {
		m.cycleFailures.Inc()
	}
	for s, t := range next {
		m.nextDiscovery.WithLabelValues(s).Set(float64(t.UnixNano()) / 1e9)
	}
}

// frontierCollector exports the frontier's size by state from the last
// background count, and the scheduler's cheap in-memory figures.
type frontierCollector struct {
	states   *States
	front    frontier.Scheduler
	urls     *prometheus.Desc
	due      *prometheus.Desc
	counted  *prometheus.Desc
	countDur *prometheus.Desc
	inFlight *prometheus.Desc
	hosts    *prometheus.Desc
}

// WatchFrontier adds the frontier's gauges: URLs by source and state (from
// states, refreshed in the background), URLs due for an aged check, and
// the leases in flight and hosts with work (read at each scrape, from memory).
func (m *Metrics) WatchFrontier(states *States, front frontier.Scheduler) {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "frontier", name), help, labels, nil)
	}
	m.reg.MustRegister(&frontierCollector{states: states, front: front,
		urls:     d("urls", "URLs in the state store, by source and state (waiting, fetched, error, excluded), from the last count.", "source", "state"),
		due:      d("aged_check_due_urls", "Fetched or failed URLs older than the source's max_age, from the last count: the next cycle revisits them.", "source"),
		counted:  d("counted_timestamp_seconds", "When the URLs were last counted, in Unix seconds."),
		countDur: d("count_duration_seconds", "How long the last count of the state store took."),
		inFlight: d("in_flight", "URLs being fetched now."),
		hosts:    d("hosts", "Hosts with queued URLs, leases or a pending delay."),
	})
}

func (c *frontierCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.urls, c.due, c.counted, c.countDur, c.inFlight, c.hosts} {
		ch <- d
	}
}

func (c *frontierCollector) Collect(ch chan<- prometheus.Metric) {
	if snap := c.states.Get(); snap != nil {
		for name, s := range snap.Sources {
			for st, n := range s.States {
				if frontier.State(st) == frontier.InFlight {
					continue // never stored: a leased URL counts as waiting
				}
				ch <- prometheus.MustNewConstMetric(c.urls, prometheus.GaugeValue, float64(n), name, frontier.State(st).String())
			}
			ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(s.AgedCheckDue), name)
		}
		ch <- prometheus.MustNewConstMetric(c.counted, prometheus.GaugeValue, float64(snap.At.UnixNano())/1e9)
		ch <- prometheus.MustNewConstMetric(c.countDur, prometheus.GaugeValue, snap.Took.Seconds())
	}
	if c.front != nil {
		st := c.front.Stats()
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.InFlight))
		ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(st.Hosts))
	}
}

var _ provider.Observer = (*Metrics)(nil)
