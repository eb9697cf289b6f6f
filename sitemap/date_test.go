package sitemap

import (
	"testing"
	"time"
)

func TestLastmodW3CDatetimeForms(t *testing.T) {
	for in, want := range map[string]string{
		"2024":                           "2024-01-01T00:00:00Z",
		"2024-07":                        "2024-07-01T00:00:00Z",
		"2024-07-16":                     "2024-07-16T00:00:00Z",
		"2024-07-16T19:20+01:00":         "2024-07-16T18:20:00Z",
		"2024-07-16T19:20:30+01:00":      "2024-07-16T18:20:30Z",
		"2024-07-16T19:20:30.45+01:00":   "2024-07-16T18:20:30.45Z",
		"2024-07-16T19:20:30Z":           "2024-07-16T19:20:30Z",
		"2024-07-16t19:20:30z":           "2024-07-16T19:20:30Z",
		"2024-07-16 19:20:30":            "2024-07-16T19:20:30Z", // no zone: UTC
		"2024-07-16T19:20:30-0500":       "2024-07-17T00:20:30Z",
		"2024-07-16T19:20:30+05":         "2024-07-16T14:20:30Z",
		"2024-07-16T19:20:30.123456789Z": "2024-07-16T19:20:30.123456789Z",
		"2024-12-31T23:59:60Z":           "2025-01-01T00:00:00Z", // a leap second
	} {
		got, ok := parseW3C(in)
		if !ok || !got.Equal(date(want)) {
			t.Errorf("parseW3C(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "24", "2024-7", "2024-13", "2023-02-29", "2024-07-16T", "2024-07-16T25:00Z",
		"2024-07-16T19:20:30+1", "2024-07-16T19:20:30 +01:00", "2024-07-16T19:20:30.Z", "yesterday", "2024-07-16T19:20:30+01:00x"} {
		if got, ok := parseW3C(in); ok || !got.IsZero() {
			t.Errorf("parseW3C(%q) = %v, %v; want no date", in, got, ok)
		}
	}
}

func TestPubDateRFC822Variants(t *testing.T) {
	for in, want := range map[string]string{
		"Mon, 02 Jan 2006 15:04:05 -0700":       "2006-01-02T22:04:05Z",
		"Mon, 02 Jan 2006 15:04:05 GMT":         "2006-01-02T15:04:05Z",
		"Mon, 2 Jan 2006 15:04:05 +0000":        "2006-01-02T15:04:05Z",
		"2 Jan 2006 15:04:05 UT":                "2006-01-02T15:04:05Z",
		"Mon, 02 Jan 06 15:04 EST":              "2006-01-02T20:04:00Z",
		"Monday, 02-Jan-06 15:04:05 PDT":        "2006-01-02T22:04:05Z",
		"Mon, 02 January 2006 15:04:05 +01:00":  "2006-01-02T14:04:05Z",
		"mon, 02 jan 2006 15:04:05 cest":        "2006-01-02T13:04:05Z",
		"Mon, 02 Jan 2006 15:04:05 XYZ":         "2006-01-02T15:04:05Z", // unknown name: UTC
		"Mon, 02 Jan 2006 15:04:05":             "2006-01-02T15:04:05Z",
		"Tue, 10 Jun 2003 04:00:00 +0000 (UTC)": "2003-06-10T04:00:00Z",
		"2006-01-02T15:04:05+01:00":             "2006-01-02T14:04:05Z", // W3C where RFC 822 belongs
	} {
		got, ok := parseRFC822(in)
		if !ok || !got.Equal(date(want)) {
			t.Errorf("parseRFC822(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "Mon", "Mon, 32 Jan 2006 15:04:05 GMT", "Mon, 02 Foo 2006 15:04:05 GMT",
		"Mon, 02 Jan 2006 24:00:00 GMT", "Mon, 02 Jan 2006 15:04:05 +2400", "Mon, 02 Jan 2006 noon GMT", "Mon, 02 Jan 2006 15:04:05 +0x00"} {
		if got, ok := parseRFC822(in); ok || !got.IsZero() {
			t.Errorf("parseRFC822(%q) = %v, %v; want no date", in, got, ok)
		}
	}
}

func TestParseW3CDoesNotAllocate(t *testing.T) {
	b := []byte("2024-07-16T19:20:30.45+01:00")
	var d time.Time
	if n := testing.AllocsPerRun(100, func() { d, _ = parseW3C(b) }); n != 0 {
		t.Errorf("%v allocations per parse", n)
	}
	if d.IsZero() {
		t.Error("no date parsed")
	}
}
