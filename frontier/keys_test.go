package frontier

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// An index entry that names no record key is damage: reads and changes of
// its URL fail as corrupt instead of taking the URL for a new one, which
// would store it a second time.
func TestADamagedIndexEntryIsCorruptNotAnUnknownURL(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0), History: DefaultHistory})
	const u = "http://a.test/x"
	mustAdd(t, f, Item{URL: u, Source: "s"})
	if err := f.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIndex).Put([]byte(u), []byte("short"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Get(u); !errors.Is(err, errCorrupt) {
		t.Errorf("Get = %v, want a corrupt store", err)
	}
	if _, err := f.Add(Item{URL: u, Source: "s"}); !errors.Is(err, errCorrupt) {
		t.Errorf("Add = %v, want a corrupt store", err)
	}
	var keys int
	f.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).ForEach(func(k, _ []byte) error {
			if !isHistoryKey(k) {
				keys++
			}
			return nil
		})
	})
	if keys != 1 {
		t.Errorf("%d records, want the one stored before the damage", keys)
	}
}
