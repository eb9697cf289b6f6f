package rules

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/crawlspace/crawlspace/config"
)

// The reject list is a file of extra exclude patterns, one a line, in the
// syntax of exclude (a substring, or "regexp:" and an expression); blank
// lines and lines starting with # are skipped. An administrator edits it
// while a crawl runs; Reload picks the change up at the next checkpoint.

// maxRejectList bounds what one reload reads.
const maxRejectList = 64 << 20

var errMissing = errors.New("reject list does not exist")

type rejectList struct {
	set  *patternSet
	refs []string // "file:line" per pattern number

	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
	missing bool
}

func emptyRejectList() *rejectList {
	ps := newPatternSet(1)
	ps.finish()
	return &rejectList{set: ps}
}

// loadRejectList reads and compiles path. A missing file gives an empty list
// and an error matching errMissing; bad lines give config.Errors positioned
// in the file, and no list.
func loadRejectList(path string) (*rejectList, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		rl := emptyRejectList()
		rl.missing = true
		return rl, fmt.Errorf("%w: %s", errMissing, path)
	}
	if err != nil {
		return emptyRejectList(), err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return emptyRejectList(), err
	}
	if len(data) > maxRejectList {
		return emptyRejectList(), fmt.Errorf("reject list %s is larger than %d MiB", path, maxRejectList>>20)
	}
	rl, err := compileRejectList(path, data)
	if err != nil {
		return emptyRejectList(), err
	}
	rl.size, rl.modTime = fi.Size(), fi.ModTime()
	return rl, nil
}

func compileRejectList(path string, data []byte) (*rejectList, error) {
	rl := &rejectList{set: newPatternSet(1), sum: sha256.Sum256(data)}
	var errs config.Errors
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if err := rl.set.add(0, len(rl.refs), string(t)); err != nil {
			errs = append(errs, &config.Error{File: path, Line: line, Msg: err.Error()})
			continue
		}
		rl.refs = append(rl.refs, fmt.Sprintf("%s:%d", path, line))
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, &config.Error{File: path, Msg: err.Error()})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	rl.set.finish()
	return rl, nil
}

// Reload re-reads the source's reject list if it changed, swapping the new
// list in atomically: Decide calls running meanwhile see the old list or the
// new one, never a mix. It is cheap when nothing changed (a stat, and a
// hash when the size or time moved). A missing file empties the list and
// is reported as an error to log, not a reason to stop; a file with a bad
// pattern keeps the old list in force and returns the positioned errors.
// After a change the caller re-decides its queued URLs and drops those that
// now match, with reason rejected.
func (s *Source) Reload() (changed bool, err error) {
	if s.rejectPath == "" {
		return false, nil
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.reject.Load()
	fi, err := os.Stat(s.rejectPath)
	if errors.Is(err, fs.ErrNotExist) {
		if old.missing {
			return false, fmt.Errorf("%w: %s", errMissing, s.rejectPath)
		}
		rl := emptyRejectList()
		rl.missing = true
		s.reject.Store(rl)
		return !old.set.empty(), fmt.Errorf("%w: %s; the list is now empty", errMissing, s.rejectPath)
	}
	if err != nil {
		return false, err
	}
	if !old.missing && fi.Size() == old.size && fi.ModTime().Equal(old.modTime) {
		return false, nil
	}
	data, err := os.ReadFile(s.rejectPath)
	if err != nil {
		return false, err
	}
	if len(data) > maxRejectList {
		return false, fmt.Errorf("reject list %s is larger than %d MiB; keeping the previous list", s.rejectPath, maxRejectList>>20)
	}
	if !old.missing && sha256.Sum256(data) == old.sum {
		// Touched, not changed: remember the new stat, keep the list.
		same := *old
		same.size, same.modTime = fi.Size(), fi.ModTime()
		s.reject.Store(&same)
		return false, nil
	}
	rl, err := compileRejectList(s.rejectPath, data)
	if err != nil {
		return false, err
	}
	rl.size, rl.modTime = fi.Size(), fi.ModTime()
	s.reject.Store(rl)
	return true, nil
}
