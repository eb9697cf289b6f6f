package provider

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/crawlspace/crawlspace/robots"
)

// errCause is a failed request's error in words, without the method and
// URL that net/http puts before it (the URL is the log line's and the
// report's own). A deadline reached while the body was read says only
// "context deadline exceeded", so a timeout is named as one.
func errCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if (errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)) && !strings.Contains(strings.ToLower(msg), "timeout") {
		msg = "timeout: " + msg
	}
	return msg
}

// robotsCause says why a host's robots.txt could not be read.
func robotsCause(ue *robots.UnavailableError) string {
	if ue.Err != nil {
		return "robots.txt " + ue.URL + ": " + errCause(ue.Err)
	}
	return "robots.txt " + ue.URL + ": HTTP " + strconv.Itoa(ue.Status)
}
