// Package benchpage is the page the HTML benchmarks and the lexer's tests
// read: one page, so that the lexer's figures and the extractor's are of
// the same bytes.
package benchpage

import (
	"fmt"
	"strings"
)

// HTML builds a realistic ~30 KB page: a head with scripts, styles and
// metadata, header, navigation, an article of paragraphs, lists and a table,
// a sidebar and a footer, about 80 links of every kind.
func HTML() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Quarterly planning guide &mdash; Example Corp Intranet</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="How teams plan their quarter: goals, capacity, dependencies and reviews.">
<meta name="keywords" content="planning, quarter, okr, capacity, roadmap">
<meta name="DCTERMS.modified" content="2024-11-03T10:00:00Z">
<meta property="og:title" content="Quarterly planning guide">
<meta name="category" content="Guides">
<link rel="canonical" href="https://intranet.example.test/guides/planning/quarterly">
<link rel="stylesheet" href="/static/site.css?v=123">
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());var s='<a href="/nope">x</a>';</script>
<style>body{font-family:system-ui}.hero{background:url(/img/hero.jpg)} .nav a{padding:4px 8px}</style>
</head><body class="page guide">
<div class="noindex cookie">We use cookies to improve the intranet. <a href="/privacy">Read more</a> <button>OK</button></div>
<header class="site"><a class="logo" href="/"><img src="/logo.svg" alt="Example Corp"></a>
<form action="/search"><input name="q" placeholder="Search"><button>Search</button></form></header>
<nav class="main"><ul>`)
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, `<li><a href="/section/%d/">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></nav><main><article><h1>Quarterly planning guide</h1>
<p class="lead">This guide explains how teams at Example Corp plan a quarter, from setting goals to the final review.</p>`)
	for s := 0; s < 10; s++ {
		fmt.Fprintf(&b, `<section id="s%d"><h2>Step %d: planning topic number %d</h2>`, s, s+1, s)
		for p := 0; p < 4; p++ {
			link := "previous goals"
			if p%2 == 0 {
				link = fmt.Sprintf(`<a href="/guides/planning/topic-%d-%d.html">previous goals</a>`, s, p)
			}
			fmt.Fprintf(&b, `<p>Teams review their %s and agree on
what matters next. Capacity is estimated from holidays, on-call duty and known commitments &amp; risks.
A planning session lasts <strong>two hours</strong>, and its outcome is written down in the
<em>team plan</em>, which is shared with stakeholders before the quarter starts. Reviews at the end
of the quarter compare the outcome with the plan and feed the next round.</p>`, link)
		}
		b.WriteString(`<ul>`)
		for l := 0; l < 3; l++ {
			fmt.Fprintf(&b, `<li><a href="../reference/item-%d-%d?x=1&amp;y=2#frag">Reference item %d</a>: a short description of the item.</li>`, s, l, l)
		}
		b.WriteString(`</ul>`)
		if s%3 == 0 {
			b.WriteString(`<table><thead><tr><th>Week</th><th>Activity</th><th>Owner</th></tr></thead><tbody>`)
			for r := 0; r < 5; r++ {
				fmt.Fprintf(&b, `<tr><td>%d</td><td>Activity for week %d</td><td><a href="mailto:owner%d@example.test">Owner %d</a></td></tr>`, r, r, r, r)
			}
			b.WriteString(`</tbody></table>`)
		}
		b.WriteString(`<!--noindex--><div class="share"><a href="https://social.example.test/share?u=x">Share</a></div><!--endnoindex--></section>`)
	}
	b.WriteString(`</article></main><aside><h3>Related</h3><ul>`)
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, `<li><a href="/guides/related-%d">Related guide %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></aside><footer><p>Last generated 2025-01-15 09:29:58</p><ul>`)
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, `<li><a href="/about/%d">Footer link %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></footer><script src="/static/app.js"></script></body></html>`)
	return []byte(b.String())
}
