package fetch

import (
	"testing"
)

// The worked examples of RFC 7616 section 3.9.1, in MD5 and SHA-256.
func TestDigestResponsesAreTheWorkedExamplesOfRFC7616(t *testing.T) {
	for _, tc := range []struct{ alg, want string }{
		{"MD5", "8ca523f5e9506fed4657c9700eebdbec"},
		{"SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"},
	} {
		ch := &digestChallenge{realm: "http-auth@example.org", nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
			algorithm: tc.alg, qop: "auth"}
		got := digestResponse(ch, "Mufasa", "Circle of Life", "GET", "/dir/index.html", "00000001",
			"f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ")
		if got != tc.want {
			t.Errorf("%s: response %s, want %s", tc.alg, got, tc.want)
		}
	}
}

func TestDigestChallengeIsFoundAmongOtherSchemesAndQuotedCommas(t *testing.T) {
	ch := parseDigest([]string{`Negotiate, Basic realm="a, b", Digest realm="x, y", qop="auth-int, auth", nonce="n1", opaque="o", algorithm=SHA-256, stale=true`})
	if ch == nil {
		t.Fatal("no challenge found")
	}
	if ch.realm != "x, y" || ch.nonce != "n1" || ch.opaque != "o" || ch.algorithm != "SHA-256" || ch.qop != "auth" || ch.stale != "true" {
		t.Errorf("parsed %+v", ch)
	}
	for _, h := range []string{`Digest realm="x", nonce="n", qop="auth-int"`, `Digest realm="x", nonce="n", algorithm=SHA-512-256`, `Digest realm="x"`, `Basic realm="x"`} {
		if ch := parseDigest([]string{h}); ch != nil {
			t.Errorf("%s: parsed %+v, want none (a challenge this client cannot answer)", h, ch)
		}
	}
}

func FuzzParseDigestNeverPanics(f *testing.F) {
	f.Add(`Digest realm="x", nonce="n", qop="auth"`)
	f.Add(`Basic realm="a\"b", Digest nonce="`)
	f.Add(`Digest ,,=,"\`)
	f.Fuzz(func(t *testing.T, h string) {
		parseDigest([]string{h})
	})
}
