package sink

import "time"

// NewFileEvery is NewFile syncing every interval, so tests choose whether
// the background sync can happen while they look.
func NewFileEvery(path, index string, onResult func(Result), every time.Duration) (*File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return newFile(path, index, onResult, f, every), nil
}
