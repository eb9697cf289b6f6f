package sitemap

import (
	"bufio"
	"io"
)

// parseText reads a text sitemap: one absolute http(s) URL a line, in
// UTF-8. Blank lines are skipped; any other line that is not a URL counts as
// an error. A line longer than the reader's buffer is skipped without being
// held in memory, so a file of one endless line (a gzip bomb of zeros) costs
// one buffer.
func parseText(in *input, res *Result, maxURLs int) error {
	long := false // inside a line already known to be too long
	for {
		line, err := in.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = true
			continue
		}
		if err != nil && len(line) > 0 && (err != io.EOF || in.exceeded()) {
			// A last line cut short by the cap or a broken stream could
			// read as a shorter, different URL.
			line, long = nil, false
		}
		if long {
			res.Errors++
			long = false
		} else if line = trimSpace(line); len(line) > 0 {
			if !isAbsHTTP(line) {
				res.Errors++
			} else if len(res.URLs) == maxURLs {
				res.Truncated = TruncatedURLs
				return nil
			} else {
				res.URLs = append(res.URLs, Entry{URL: string(line)})
			}
		}
		if err != nil {
			return textErr(err)
		}
	}
}

func textErr(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}
