// Package servicetest finds, for tests, a server the project's scripts start (the Tika server,
// the embedding model): at the URL an environment variable names, else on 127.0.0.1 at the port
// the script also reads, else at its default address. It is checked once per test binary; where
// it cannot be reached the test skips, except under CI, where it fails: a CI run must never pass
// by skipping the tests of a real part. Under go test -short only a server its variables name is
// used (SkipShort).
package servicetest

import (
	"os"
	"strings"
	"sync"
	"testing"
)

// InCI says whether the CI environment variable is set to anything but a false value.
func InCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// SkipShort skips t under go test -short unless one of envs is set: the inner loop runs without
// outside servers, whatever happens to listen at their default addresses, and one named on purpose
// is used.
func SkipShort(t testing.TB, name string, envs ...string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	for _, e := range envs {
		if os.Getenv(e) != "" {
			return
		}
	}
	t.Skipf("-short: %s is left out (set %s to use one)", name, strings.Join(envs, " or "))
}

// Server is one server a script starts.
type Server struct {
	// Name says what it is ("the Tika server"); Start how to start it ("scripts/tika start").
	Name, Start string
	// EnvURL names the variable holding its URL; EnvPort the port variable its script reads.
	EnvURL, EnvPort string
	// DefaultURL is where the script serves without EnvPort; Path follows host and port in a
	// URL made from EnvPort ("/v1", or "").
	DefaultURL, Path string
	// Probe checks that the server at a base URL answers as itself.
	Probe func(base string) error

	once sync.Once
	url  string
	err  error
}

// URL returns the server's base URL, without a trailing slash, or skips (fails under CI) the test.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	SkipShort(t, s.Name, s.EnvURL, s.EnvPort)
	s.once.Do(func() {
		s.url = strings.TrimRight(os.Getenv(s.EnvURL), "/")
		if s.url == "" {
			s.url = s.DefaultURL
			if port := os.Getenv(s.EnvPort); port != "" {
				s.url = "http://127.0.0.1:" + port + s.Path
			}
		}
		s.err = s.Probe(s.url)
	})
	if s.err != nil {
		if InCI() {
			t.Fatalf("%s is required in CI: %v", s.Name, s.err)
		}
		t.Skipf("%s not reachable (%v); run %s, or scripts/test", s.Name, s.err, s.Start)
	}
	return s.url
}
