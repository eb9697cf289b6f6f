package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Class is why a URL was queued. It selects the URL's weighted queue within
// its host, after Exalead's fifos: start URLs, redirect targets, index-only,
// index-and-follow, follow-only and refresh.
type Class uint8

const (
	Start       Class = iota // a source's start URLs (weight 10000)
	Redirect                 // redirect targets (2000)
	IndexOnly                // indexed, links not followed (1000)
	IndexFollow              // indexed and links followed (100)
	FollowOnly               // links followed, not indexed (10)
	Refresh                  // aged checks (1)
	numClasses
)

var classNames = [numClasses]string{"start", "redirect", "index", "index_follow", "follow", "refresh"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Priority shifts, as written in crawl rules: -2 is highest, 2 is lowest.
const (
	MinShift = -2
	MaxShift = 2
)

// The base weights are Exalead's. A shift s multiplies a weight by 4^-s, so
// one step of priority is worth a quarter of the distance between two
// neighbouring fifos (10000 → 2000 → 1000 → 100 …): -2 makes an index-follow
// link (100) weigh 1600, more than an index-only one, and +2 makes it 6.25.
// Weights are kept as integers scaled by 4^2 so every stride below is exact.
var classWeight = [numClasses]uint64{10000, 2000, 1000, 100, 10, 1}

const (
	numShifts = MaxShift - MinShift + 1
	numLevels = int(numClasses) * numShifts
	// strideScale is divisible by every scaled weight (10000·4^4 is the
	// largest), so the stride scheduler's proportions are exact.
	strideScale = 10000 << 8
)

// Weight is the effective weight of a class shifted by a rule priority: the
// share of a host's picks its queue receives relative to the others.
func Weight(c Class, shift int) float64 {
	return float64(levelWeight(level(c, shift))) / 16
}

// level numbers the (class, shift) queues of a host; a lower level has a
// higher or equal base weight, which breaks ties in its favour.
func level(c Class, shift int) uint8 { return uint8(int(c)*numShifts + shift - MinShift) }

func levelWeight(l uint8) uint64 {
	return classWeight[l/numShifts] << (2 * (numShifts - 1 - uint64(l%numShifts)))
}

func levelStride(l uint8) uint64 { return strideScale / levelWeight(l) }

// State is where a URL stands.
type State uint8

const (
	Waiting  State = iota // queued, not yet leased
	InFlight              // leased to a worker; never stored: a crash turns it back into Waiting
	Fetched               // fetched successfully at FetchedAt
	Error                 // the last attempt failed permanently (Reason, Status, ErrCount)
	Excluded              // not to be fetched (Reason)
	numStates
)

var stateNames = [numStates]string{"waiting", "in_flight", "fetched", "error", "excluded"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Item is a URL to be queued.
type Item struct {
	// URL is normalised by the caller; it is the key, compared byte for byte.
	URL    string
	Source string
	Depth  int
	Class  Class
	// Shift is the crawl rule priority, MinShift (highest) to MaxShift (lowest).
	Shift int
	// Kind is the caller's tag for what the URL is (page, sitemap, feed…);
	// stored, never interpreted.
	Kind uint8
	// Lastmod is the sitemap's lastmod, zero when unknown.
	Lastmod time.Time
	// Via is the referring page, optional (it costs its length on disk per URL).
	Via string
	// Hops counts the redirects that led to this URL from a URL found as
	// a link, so a chain of redirects through ever new URLs is bounded.
	Hops int
	// FoundAs is the URL as the site wrote it (urlnorm.Found: its query
	// parameters in their order), what robots.txt judges and what is
	// requested, when it differs from URL, the key; "" otherwise, so it
	// costs nothing where the two are one. Set it with SetFoundAs.
	FoundAs string
}

// SetFoundAs records found, the URL as found, unless it is the key.
func (it *Item) SetFoundAs(found string) {
	it.FoundAs = ""
	if found != it.URL {
		it.FoundAs = found
	}
}

// AsFound is the URL as the site wrote it: FoundAs, else the key.
func (it *Item) AsFound() string {
	if it.FoundAs != "" {
		return it.FoundAs
	}
	return it.URL
}

// Record is the stored state of one URL.
type Record struct {
	Item
	State State
	// Reason says why a URL is in Error or Excluded, or why its last attempt
	// was a temporary failure.
	Reason string
	// Status is the HTTP status of the last attempt, 0 when none was received.
	Status int
	// ErrCount counts permanent errors in a row; TempErrCount temporary ones.
	// A successful fetch resets both.
	ErrCount     int
	TempErrCount int
	// FetchedAt is the last successful fetch; CheckedAt the last completed
	// attempt, whatever its outcome.
	FetchedAt time.Time
	CheckedAt time.Time
	// Validators and content hash of the last successful fetch.
	ETag         string
	LastModified string
	Hash         string
	// Sync bookkeeping, set by Outcome.Pending and Acknowledge: the
	// document's id, whether the index holds it.
	DocID   string
	Indexed bool
	// Pending is an index or delete write not yet acknowledged
	// (PendingIndex, PendingDelete; records with one are listed by
	// Pending), or a delete held back from the index (PendingHold,
	// PendingHeld; listed by Held).
	Pending string
	// Target is the URL holding the document when this one is a redirect
	// source or a canonical alias.
	Target string
	// Cycle is the discovery cycle the URL was last queued in; SeenCycle the
	// last cycle Add was called with it (a link, a start URL, a sitemap).
	Cycle     uint64
	SeenCycle uint64
	// HasLinks says the page's outlinks are stored (see Outcome.ReadLinks):
	// without them, what the page links is unknown.
	HasLinks bool
	// Orphan marks a page no chain of stored links reaches from its
	// source's roots any more, as last found (see Reach).
	Orphan bool

	qseq uint64 // sequence of its queue entry while Waiting
	// content is the content key of the group of duplicates the URL is
	// in, "" when in none (see regroup).
	content string
	// stored is what the orphan walk reads of the record as it was
	// decoded, so that a put can tell whether it changed (see
	// ReachGeneration); zero for a record never stored or decoded without
	// its strings.
	stored walkView
}

// walkView is what of a record the orphan walk reads (the provider's
// scanOrphans and unread): a change to it can change the walk's verdict.
// Of the status it keeps only whether the URL redirects, which is all
// the walk asks of it, so the 304 that follows a 200 changes nothing.
// Waiting reads as Fetched: a fetched page queued again and fetched
// unchanged (a start URL, every cycle) changes nothing either. That is
// sound for a caller that takes a walk's verdict only when no record is
// Waiting as it walks: every Waiting record then either is new (counted
// when stored), or was queued from a state other than Fetched (counted as
// it was queued), or was Fetched, and reads the same.
type walkView struct {
	known                     bool
	state                     State
	indexed, hasLinks, orphan bool
	redirect                  bool
	source, reason, pending   string
	target                    string
}

func (r *Record) walkView() walkView {
	state := r.State
	if state == Waiting || state == InFlight {
		state = Fetched
	}
	return walkView{
		known: true, state: state,
		indexed: r.Indexed, hasLinks: r.HasLinks, orphan: r.Orphan,
		redirect: r.Status >= 300 && r.Status < 400 && r.Status != 304,
		source:   r.Source, reason: r.Reason, pending: r.Pending, target: r.Target,
	}
}

// The pending writes of Record.Pending.
const (
	PendingIndex  = "index"
	PendingDelete = "delete"
	// PendingHold is a delete decided and not sent: it waits for the end
	// of its cycle, where the caller sends it (MoveHeld to PendingDelete)
	// or holds it (MoveHeld to PendingHeld). Its document stays in the
	// index meanwhile.
	PendingHold = "hold"
	// PendingHeld is a delete held past the end of its cycle, until a
	// later visit of the URL decides it again or an operator confirms it.
	PendingHeld = "held"
)

// HoldDetail is the history detail of a delete decided and held back
// until the end of its cycle (PendingHold).
const HoldDetail = "waits for the end of the cycle, which sends it or holds it"

// HeldDelete says whether pending is a delete held back from the index
// (PendingHold or PendingHeld): nothing of it was sent.
func HeldDelete(pending string) bool { return pending == PendingHold || pending == PendingHeld }

// Encoding: a version byte, the integers as uvarints, the times as varint
// Unix nanoseconds (0 for the zero time), the string lengths, then the
// string bytes back to back so a decode costs one allocation. Version 2
// (store format 3) holds the URL first among the strings, since the key is
// no longer the URL (see keys.go), and its group's content key last;
// version 1, keyed by its URL, is read only to move it (migrateRecords).
// A record whose URL as found differs from its key (Item.FoundAs) says so
// with flagFound and holds that URL as a twelfth string; any other is
// written byte for byte as before it existed, and a record written before
// it is read as one whose URL was found as it is keyed.
const (
	recVersion1 = 1
	recVersion  = 2
)

const (
	flagIndexed = 1 << iota
	flagHasLinks
	flagOrphan
	flagFound
)

const hopsShift = 8

var errCorrupt = errors.New("frontier: corrupt record")

func appendRecord(b []byte, r *Record) []byte {
	b = append(b, recVersion, byte(r.State), byte(r.Class), r.Kind)
	b = binary.AppendVarint(b, int64(r.Shift))
	// Hops rides above the flag bits: records written before it read as 0.
	flags := uint64(r.Hops) << hopsShift
	if r.Indexed {
		flags |= flagIndexed
	}
	if r.HasLinks {
		flags |= flagHasLinks
	}
	if r.Orphan {
		flags |= flagOrphan
	}
	if r.FoundAs != "" {
		flags |= flagFound
	}
	for _, v := range [...]uint64{uint64(r.Depth), uint64(r.Status), uint64(r.ErrCount),
		uint64(r.TempErrCount), flags, r.Cycle, r.SeenCycle, r.qseq} {
		b = binary.AppendUvarint(b, v)
	}
	for _, t := range [...]time.Time{r.Lastmod, r.FetchedAt, r.CheckedAt} {
		b = binary.AppendVarint(b, unixNano(t))
	}
	strs := [...]string{r.URL, r.Source, r.Via, r.Reason, r.ETag, r.LastModified, r.Hash, r.DocID, r.Target, r.Pending, r.content, r.FoundAs}
	n := len(strs)
	if r.FoundAs == "" {
		n--
	}
	for _, s := range strs[:n] {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	for _, s := range strs[:n] {
		b = append(b, s...)
	}
	return b
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// decoder reads the fields in order and remembers the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// decodeRecord fills r from an encoded value, its URL included. Without
// strs it leaves the strings empty, the URL too, and allocates nothing, for
// the checks on the hot paths.
func decodeRecord(b []byte, r *Record, strs bool) error {
	if len(b) < 4 || b[0] != recVersion {
		return errCorrupt
	}
	return decodeFields(b, r, strs, 11)
}

// decodeRecordV1 reads a record of store format 2 or older, whose URL was
// its key.
func decodeRecordV1(url string, b []byte, r *Record) error {
	if len(b) < 4 || b[0] != recVersion1 {
		return errCorrupt
	}
	if err := decodeFields(b, r, true, 9); err != nil {
		return err
	}
	r.URL = url
	return nil
}

// decodeFields decodes a record of nstr strings: 11 with the URL first and
// the content key last (12 with the URL as found after it, as flagFound
// says), 9 without them.
func decodeFields(b []byte, r *Record, strs bool, nstr int) error {
	*r = Record{}
	r.State, r.Class, r.Kind = State(b[1]), Class(b[2]), b[3]
	d := decoder{b: b[4:]}
	r.Shift = int(d.varint())
	r.Depth = int(d.uvarint())
	r.Status = int(d.uvarint())
	r.ErrCount = int(d.uvarint())
	r.TempErrCount = int(d.uvarint())
	flags := d.uvarint()
	r.Indexed = flags&flagIndexed != 0
	r.HasLinks = flags&flagHasLinks != 0
	r.Orphan = flags&flagOrphan != 0
	if flags&flagFound != 0 {
		if nstr != 11 {
			return errCorrupt
		}
		nstr = 12
	}
	r.Hops = int(flags >> hopsShift)
	r.Cycle = d.uvarint()
	r.SeenCycle = d.uvarint()
	r.qseq = d.uvarint()
	r.Lastmod = fromUnixNano(d.varint())
	r.FetchedAt = fromUnixNano(d.varint())
	r.CheckedAt = fromUnixNano(d.varint())
	var lens [12]uint64
	total := uint64(0)
	for i := range nstr {
		lens[i] = d.uvarint()
		// Each length checked alone first: damaged lengths could wrap
		// their sum around to the bytes left and slice past them.
		if lens[i] > uint64(len(b)) {
			return errCorrupt
		}
		total += lens[i]
	}
	if d.err != nil {
		return d.err
	}
	if total != uint64(len(d.b)) || r.State >= numStates || r.Class >= numClasses || r.Shift < MinShift || r.Shift > MaxShift {
		return errCorrupt
	}
	if !strs {
		return nil
	}
	all := string(d.b)
	ptrs := [...]*string{&r.URL, &r.Source, &r.Via, &r.Reason, &r.ETag, &r.LastModified, &r.Hash, &r.DocID, &r.Target, &r.Pending, &r.content, &r.FoundAs}
	p := ptrs[:nstr]
	if nstr == 9 {
		p = ptrs[1:10]
	}
	off := uint64(0)
	for i, ptr := range p {
		*ptr = all[off : off+lens[i]]
		off += lens[i]
	}
	r.stored = r.walkView()
	return nil
}
