// Package redact keeps credentials out of logs and error messages. A URL
// from the configuration (an Elasticsearch address, fetch.proxy) may carry
// them as user:password@, and Go's own errors quote such URLs as given (a
// url.Parse error does); anything that may hold one goes through here on
// its way to a log line or an error.
package redact

import (
	"regexp"
	"strings"
)

// userinfo matches a URL's scheme and its user information: everything
// between "//" and the last "@" before the path, query, fragment or the
// end of the quoted or space-separated URL.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s"'<>` + "`" + `]*@`)

// Mask stands for the user information taken out.
const Mask = "xxxxx"

// URLs returns s with the user information of every URL in it replaced by
// Mask: "http://user:secret@host/" becomes "http://xxxxx@host/".
func URLs(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
}

// Error returns err with URLs redacted from its message; errors.Is and
// errors.As still see the error it wraps. A nil or clean error is
// returned as it is.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := URLs(msg)
	if clean == msg {
		return err
	}
	return redacted{err: err, msg: clean}
}

type redacted struct {
	err error
	msg string
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }
