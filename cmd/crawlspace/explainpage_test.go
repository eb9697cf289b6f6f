package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExplainPageShowsWhichRuleFilledWhichFieldOfASavedPage(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "crawl.yaml")
	yaml := "extra_fields: {extra_section: keyword, extra_price: double, extra_headline: text}\n" + // 1
		"sources:\n" + // 2
		"  - name: shop\n" + // 3
		"    start_urls: [\"http://shop.test/\"]\n" + // 4
		"    crawl_rules:\n" + // 5
		"      - {match: {path: /item/}, add_meta: {section: items}}\n" + // 6
		"    extraction:\n" + // 7
		"      structured_data_mappings: [\"Product.name:extra_headline\"]\n" + // 8
		"      rules:\n" + // 9
		"        - include: [/item/]\n" + // 10
		"          fields:\n" + // 11
		"            - {field: extra_price, selector: .price}\n" // 12
	page := filepath.Join(dir, "item.html")
	for name, data := range map[string]string{cfgPath: yaml, page: `<!doctype html><title>Kettle</title>
<script type="application/ld+json">{"@type":"Product","name":"Kettle 2000"}</script>
<p class="price">call</p><p>A kettle that boils water quickly and quietly, with a filter that keeps the scale out of your tea.</p>`} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := runExplainCmd("-config", cfgPath, "-offline", "-page", page, "http://shop.test/item/7")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"extra_headline  Kettle 2000",
		cfgPath + ":8:34 sources[0].extraction.structured_data_mappings[0]",
		"doc_language    en",
		"detected (the page declares no language)",
		`refused         extra_price: "call" is not a double (` + cfgPath + ":12:15 sources[0].extraction.rules[0].fields[0])",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runExplainCmd("-config", cfgPath, "-offline", "-json", "-page", page, "http://shop.test/item/7")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want the URL's line and the page's, got:\n%s", out)
	}
	var pf struct {
		Doc     map[string]any `json:"doc"`
		Origins []struct {
			Field, Rule     string
			Values, Dropped []string
		} `json:"origins"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &pf); err != nil {
		t.Fatal(err)
	}
	if got := pf.Doc["extra_section"]; got == nil || got.([]any)[0] != "items" {
		t.Errorf("the crawl rule's add_meta is not applied: extra_section = %v", got)
	}
	// The rule whose value was refused is named too, with what it refused.
	if len(pf.Origins) != 3 || pf.Origins[0].Field != "extra_price" || len(pf.Origins[0].Dropped) != 1 ||
		pf.Origins[1].Field != "extra_headline" || pf.Origins[2].Field != "doc_language" {
		t.Errorf("origins = %+v", pf.Origins)
	}

	if code, _, _ := runExplainCmd("-config", cfgPath, "-offline", "-page", page, "http://elsewhere.test/"); code != exitFailed {
		t.Errorf("a URL of no source: exit %d, want %d", code, exitFailed)
	}
	if code, _, _ := runExplainCmd("-config", cfgPath, "-page", page, "http://shop.test/a", "http://shop.test/b"); code != exitUsage {
		t.Errorf("-page with two URLs: exit %d, want %d", code, exitUsage)
	}
}

// A saved page of a URL the site wrote with its parameters in another
// order maps as the document of its key, its links resolved against the
// URL requested.
func TestExplainPageMapsTheDocumentOfTheKeyAndResolvesLinksAgainstTheURLRequested(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "crawl.yaml")
	page := filepath.Join(dir, "list.html")
	for name, data := range map[string]string{
		cfgPath: "sources: [{name: shop, start_urls: [\"http://shop.test/\"], honored_query_params: [a, b]}]\n",
		page:    `<!doctype html><title>List</title><p>A list of things.</p>`,
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runExplainCmd("-config", cfgPath, "-offline", "-json", "-page", page, "http://shop.test/list?b=2&a=1&utm=x")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var pf struct {
		Doc struct {
			URL string `json:"doc_url"`
		} `json:"doc"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &pf) != nil || pf.Doc.URL != "http://shop.test/list?a=1&b=2" {
		t.Errorf("the page maps as the document of %q, want the key http://shop.test/list?a=1&b=2:\n%s", pf.Doc.URL, out)
	}
}
