package config

import "testing"

// extraDecl declares the extra fields the extraction cases fill.
const extraDecl = "extra_fields: {extra_price: double, extra_tag: keyword}\n"

func TestExtractionRulesAreValidatedAtTheirPosition(t *testing.T) {
	runErrCases(t, []errCase{
		{"a valid rule of each kind", extraDecl + src(
			"extraction:",
			"  rules:",
			"    - include: [/shop/]",
			"      fields:",
			"        - {field: extra_price, selector: \"span.price\"}",
			"        - {field: extra_tag, selector: \"a[rel=tag]\", attribute: href, values: all}",
			"        - {field: extra_tag, url: \"/shop/([a-z]+)/\"}",
			"        - {field: extra_tag, value: shop}",
		), nil},
		{"no field source, two sources, bad values", extraDecl + src(
			"extraction:",
			"  rules:",
			"    - fields:",
			"        - {field: extra_tag}",
			"        - {field: extra_tag, selector: p, value: x}",
			"        - {field: extra_tag, selector: p, values: some}",
			"        - {field: extra_tag, url: x, attribute: href}",
		), []string{
			`c.yaml:8:15: sources[0].extraction.rules[0].fields[0]: give one of selector, url or value`,
			`c.yaml:9:54: sources[0].extraction.rules[0].fields[1].value: give only one of selector, url or value (selector is given too)`,
			`c.yaml:10:55: sources[0].extraction.rules[0].fields[2].values: "some" is not one of first, all`,
			`c.yaml:11:53: sources[0].extraction.rules[0].fields[3].attribute: needs a selector`,
		}},
		{"an undeclared field, a bad selector, a bad regexp, no fields", extraDecl + src(
			"extraction:",
			"  rules:",
			"    - fields:",
			"        - {field: extra_nope, value: x}",
			"        - {field: extra_tag, selector: \"p[\"}",
			"        - {field: extra_tag, url: \"(\"}",
			"    - include: [/x/]",
		), []string{
			`c.yaml:8:23: sources[0].extraction.rules[0].fields[0].field: field extra_nope is not declared in extra_fields (add "extra_nope: keyword" there)`,
			`c.yaml:9:44: sources[0].extraction.rules[0].fields[1].selector: "p[" is not a CSS selector: expected identifier, found EOF instead`,
			`c.yaml:10:39: sources[0].extraction.rules[0].fields[2].url: "(" is not a regular expression (RE2 syntax): error parsing regexp: missing closing ): ` + "`(`",
			`c.yaml:11:11: sources[0].extraction.rules[1].fields: at least one field is required`,
		}},
		{"structured data mappings and languages", extraDecl + src(
			"extraction:",
			"  structured_data_mappings: [\"Product.offers.price:extra_price\", \"offers price:extra_price\", \"name:extra_nope\"]",
			"  languages: [en, xx]",
		), []string{
			`c.yaml:6:70: sources[0].extraction.structured_data_mappings[1]: "offers price:extra_price" must be [Type.]property[.property...]:extra_field, such as Article.author.name:extra_author`,
			`c.yaml:6:98: sources[0].extraction.structured_data_mappings[2]: field extra_nope is not declared in extra_fields (add "extra_nope: keyword" there)`,
			`c.yaml:7:23: sources[0].extraction.languages[1]: "xx" is not a language detection knows; give an ISO 639-1 code such as en, de, fr (docs/fields.md lists them)`,
		}},
		{"switches that contradict their lists", extraDecl + src(
			"extraction:",
			"  structured_data_mappings: [\"name:extra_tag\"]",
			"  ignore_structured_data: true",
			"  languages: [en]",
			"  no_language_detection: true",
		), []string{
			`c.yaml:6:33: sources[0].extraction.structured_data_mappings: contradicts ignore_structured_data: true`,
			`c.yaml:8:18: sources[0].extraction.languages: contradicts no_language_detection: true`,
		}},
	})
}
