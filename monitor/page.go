package monitor

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

// The status page is rendered on the server from View, with no script:
// it reloads itself every 10 seconds.
var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"when":  when,
	"dur":   seconds,
	"rate":  perSecond,
	"parts": ranges,
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="10">
<title>crawlspace status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em 2em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666}.banner{padding:.5em .8em;border-radius:4px;margin:.8em 0;background:#eef5ff}
.banner.err{background:#fdecea;color:#8a1c12}.banner.run{background:#e8f6ec}
table{border-collapse:collapse;margin:.3em 0}th,td{padding:.25em .7em;text-align:right;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f6f6f6;font-weight:600}td.l,th.l{text-align:left}.bad{color:#b3261e;font-weight:600}
ul{margin:.2em 0;padding-left:1.2em}code{font-size:.95em}.small{color:#666;font-size:.9em}
</style>
</head>
<body>
<h1>crawlspace status</h1>
<div class="meta">{{.Version}} · {{.Now.Format "2006-01-02 15:04:05 MST"}} · {{.Cycles}} cycle(s) finished since start{{if not .Counted.IsZero}} · state store counted {{when .Counted .Now}}{{end}}</div>
{{if .Running}}<div class="banner run" id="cycle">Cycle running since {{.Current.Started.Format "15:04:05"}} ({{when .Current.Started .Now}}).</div>
{{else if not .NextCycle.IsZero}}<div class="banner" id="cycle">Idle. Next cycle {{when .NextCycle .Now}} ({{.NextCycle.Format "2006-01-02 15:04:05"}}).</div>{{end}}
{{if .LastError}}<div class="banner err">The last cycle failed: {{.LastError}}</div>{{end}}
{{range .Sources}}{{$src := .Name}}{{with .DeletesHeld}}<div class="banner err" id="held-{{$src}}">Deletes held for source <b>{{$src}}</b>: {{.Count}} of its {{.Documents}} documents ({{.Share}}%, more than <code>hold_deletes</code> allows: {{.Percent}}% and {{.MinCount}}), since {{.Since.Format "2006-01-02 15:04"}}, such as <a href="{{.Example}}">{{.Example}}</a>. Their documents stay in the index: the next cycle sends the deletes it decides again; <code>crawlspace confirm-deletes -config F -source {{$src}}</code> sends them now.</div>
{{end}}{{end}}
<h2>Sources</h2>
<table id="sources">
<tr><th class="l">source</th><th>fetched</th><th>pages/s</th><th>created</th><th>updated</th><th>unchanged</th><th>deleted</th><th>written</th><th>errors</th><th>queued</th><th>in store: fetched</th><th>error</th><th>excluded</th></tr>
{{range .Sources}}<tr><td class="l">{{.Name}}</td><td>{{.Cycle.Fetched}}</td><td>{{rate .Cycle.Fetched .Elapsed}}</td><td>{{.Cycle.Created}}</td><td>{{.Cycle.Updated}}</td><td>{{.Cycle.Unchanged}}</td><td>{{.Cycle.Deleted}}</td><td>{{.Cycle.Written}}</td><td{{if .Cycle.Errors}} class="bad"{{end}}>{{.Cycle.Errors}}</td><td>{{.Queued}}</td><td>{{index .States "fetched"}}</td><td>{{index .States "error"}}</td><td>{{index .States "excluded"}}</td></tr>
{{end}}</table>
<div class="small">The counts of the {{if .Running}}running{{else}}last{{end}} cycle; the state store's URLs by state from the last count.</div>

<h2>What is due next</h2>
<ul id="due">
{{range .Sources}}<li><b>{{.Name}}</b>: {{with .Paused}}<span class="bad">paused</span> since {{.Since.Format "2006-01-02 15:04"}}{{if .By}} by {{.By}}{{end}}: nothing of it is fetched until it is resumed; {{end}}discovery (start URLs, sitemaps, feeds) {{if .DiscoveryDue}}due now{{else}}{{when .NextDiscovery $.Now}} ({{.NextDiscovery.Format "2006-01-02 15:04"}}){{end}}, every {{.Interval}}; {{if .MaxAge}}{{.AgedCheckDue}} URL(s) due for an aged check (max_age {{.MaxAge}}){{else}}no aged checks (no max_age){{end}}.</li>
{{end}}</ul>

{{with .Last}}<h2>Last cycle</h2>
<div class="meta" id="last">finished {{.Finished.Format "2006-01-02 15:04:05"}} after {{dur .Seconds}}, into {{.Sink}}</div>
<table id="report">
<tr><th class="l">source</th><th>fetched</th><th>created</th><th>updated</th><th>unchanged</th><th>deleted</th><th>written</th><th>errors</th><th>index failures</th></tr>
{{range $name, $c := .Sources}}{{if $name}}<tr><td class="l">{{$name}}</td><td>{{$c.Fetched}}</td><td>{{$c.Created}}</td><td>{{$c.Updated}}</td><td>{{$c.Unchanged}}</td><td>{{$c.Deleted}}</td><td>{{$c.Written}}</td><td>{{$c.Errors}}</td><td>{{$c.IndexFailures}}</td></tr>{{end}}
{{end}}<tr><th class="l">total</th><th>{{.Total.Fetched}}</th><th>{{.Total.Created}}</th><th>{{.Total.Updated}}</th><th>{{.Total.Unchanged}}</th><th>{{.Total.Deleted}}</th><th>{{.Total.Written}}</th><th>{{.Total.Errors}}</th><th>{{.Total.IndexFailures}}</th></tr>
</table>
{{if .Warnings}}<ul class="bad">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}

{{with .Cluster}}<h2>Cluster</h2>
<div class="meta" id="cluster-meta">state {{.StateIndex}}: {{.Partitions}} partitions, {{len .Free}} free{{if .Free}} ({{parts .Free}}){{end}} · read {{when .Read $.Now}}</div>
<table id="cluster">
<tr><th class="l">process</th><th class="l">state</th><th class="l">heartbeat</th><th>hosts</th><th>in flight</th><th>partitions</th><th class="l">held</th></tr>
{{range .Members}}<tr><td class="l">{{.Node}}</td><td class="l{{if not .Alive}} bad{{end}}">{{if .Alive}}alive{{else}}gone{{end}}</td><td class="l">{{.Heartbeat.Format "15:04:05"}} ({{when .Heartbeat $.Now}})</td><td>{{.Hosts}}</td><td>{{.InFlight}}</td><td>{{len .Partitions}}</td><td class="l">{{parts .Partitions}}</td></tr>
{{end}}</table>
<div class="small">As this process last read the cluster (every third of <code>cluster.lease_ttl</code>); hosts and in flight as each process last said.</div>
{{end}}

<h2>Errors and skipped URLs by reason</h2>
{{if .Reasons}}<table id="reasons">
<tr><th class="l">reason</th><th>URLs</th><th class="l">examples</th></tr>
{{range .Reasons}}<tr><td class="l"><code>{{.Reason}}</code></td><td>{{.Count}}</td><td class="l"><ul>{{range .Examples}}<li><a href="{{.URL}}">{{.URL}}</a> <span class="small">{{.Source}}{{if .Detail}} · {{.Detail}}{{end}}</span></li>{{end}}</ul></td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<p class="small">From the {{if .Last}}last finished{{else}}running{{end}} cycle. <code>crawlspace status -config F -url U</code> shows one URL's history. Metrics: <a href="/metrics">/metrics</a>, data: <a href="/status.json">/status.json</a>.</p>
</body>
</html>
`))

// when says how far t is from now, in words.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := t.Sub(now)
	ago := d < 0
	if ago {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if ago {
		return s + " ago"
	}
	return "in " + s
}

// seconds is a duration in seconds, rounded to what a reader needs.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func perSecond(n int, secs float64) string {
	if secs <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(n)/secs)
}

func (s *Server) servePage(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	if err := page.Execute(&b, s.View()); err != nil {
		s.log.Error("status page", "err", err)
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
