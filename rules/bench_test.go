package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

func ptr[T any](v T) *T { return &v }

// bigConfig is a source with about 1,000 rules of every indexed kind:
// include and exclude substrings, regexps, prefix and domain rules, crawl
// rules and kill patterns.
func bigConfig() *config.Config {
	cfg, err := config.Parse("big.yaml", []byte("sources:\n  - name: big\n    start_urls: [\"http://www.dept1.example.com/section-1/\"]\n"))
	if err != nil {
		panic(err)
	}
	src := &cfg.Sources[0]
	src.StayOnStartHosts = ptr(false)
	src.HonoredQueryParams = []string{"id", "page"}
	// No depth limits, and the longest URL the store holds, as before
	// the config gave the defaults.
	src.MaxPathDepth, src.MaxLinkDepth, src.MaxURLLength = 0, 0, urlnorm.MaxLength
	for i := range 150 {
		src.Include = append(src.Include, fmt.Sprintf("/section-%d/", i))
	}
	for i := range 240 {
		src.Exclude = append(src.Exclude, fmt.Sprintf("/archive-%d/", i))
	}
	for i := range 10 {
		src.Exclude = append(src.Exclude, fmt.Sprintf(`regexp:/calendar/%d\d{3}/|\?sessionid%d=`, i, i))
	}
	for i := range 150 {
		src.Rules = append(src.Rules,
			fmt.Sprintf("forbid prefix http://www.dept%d.example.com/section-%d/*/private/*", i, i),
			fmt.Sprintf("allow prefix http://www.dept%d.example.com/section-*", i),
		)
	}
	for i := range 125 {
		src.Rules = append(src.Rules,
			fmt.Sprintf("forbid domain bad%d.dept%d.example.com", i, i),
			fmt.Sprintf("allow domain *.dept%d.example.com", i),
		)
	}
	src.Rules = append(src.Rules, "forbid domain *")
	for i := range 40 {
		src.CrawlRules = append(src.CrawlRules, config.CrawlRule{
			Match:    config.Match{And: []config.Match{{Domain: ptr(fmt.Sprintf("dept%d.example.com", i))}, {Path: ptr(fmt.Sprintf("/section-%d/news/", i))}}},
			Priority: -1,
			AddMeta:  map[string]string{"section": "news"},
		})
	}
	for i := range 25 {
		src.KillPatterns = append(src.KillPatterns, fmt.Sprintf("/section-%d/index/", i))
	}
	return cfg
}

func benchURLs() []string {
	var urls []string
	for i := range 16 {
		d := i * 7
		urls = append(urls,
			fmt.Sprintf("http://www.dept%d.example.com/section-%d/docs/page-%d.html", d, d, i),
			fmt.Sprintf("http://www.dept%d.example.com/section-%d/a/private/b", d, d),
			fmt.Sprintf("http://www.dept%d.example.com/section-%d/archive-%d/x", d, d, i*13),
			fmt.Sprintf("http://bad%d.dept%d.example.com/section-1/", d, d),
			fmt.Sprintf("http://www.elsewhere%d.org/section-1/", i),
			fmt.Sprintf("http://www.dept%d.example.com/section-%d/news/today?id=%d", i, i, i),
			fmt.Sprintf("http://www.dept%d.example.com/section-%d/calendar/%d123/", d, d, i%10),
			fmt.Sprintf("http://www.dept%d.example.com/other/page", d),
		)
	}
	return urls
}

func BenchmarkDecide1000Rules(b *testing.B) {
	cfg := bigConfig()
	set, err := Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := set.Source("big")
	n := len(cfg.Sources[0].Include) + len(cfg.Sources[0].Exclude) + len(cfg.Sources[0].Rules) +
		len(cfg.Sources[0].CrawlRules) + len(cfg.Sources[0].KillPatterns)
	b.Logf("%d rules", n)
	urls := benchURLs()
	for i, u := range urls {
		if urls[i], err = s.Normalize(u); err != nil {
			b.Fatal(err)
		}
	}
	reasons := map[Reason]int{}
	for _, u := range urls {
		reasons[s.Decide(u, 1).Reason]++
	}
	b.Logf("decisions over the sample: %v", reasons)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Decide(urls[i%len(urls)], 1)
		i++
	}
}

// BenchmarkDecideFound1000Rules judges links as found: the sample's URLs,
// and each with a parameter the query filter drops, which costs the
// rewrite and a second decision.
func BenchmarkDecideFound1000Rules(b *testing.B) {
	set, err := Compile(bigConfig())
	if err != nil {
		b.Fatal(err)
	}
	s := set.Source("big")
	var urls []string
	for _, raw := range benchURLs() {
		for _, q := range []string{"", "utm_source=mail"} {
			u := raw
			if q != "" {
				u += map[bool]string{true: "&", false: "?"}[strings.Contains(u, "?")] + q
			}
			found, err := urlnorm.Found(u)
			if err != nil {
				b.Fatal(err)
			}
			urls = append(urls, found)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.DecideFound(urls[i%len(urls)], 1)
		i++
	}
}

func BenchmarkCompile1000Rules(b *testing.B) {
	cfg := bigConfig()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
