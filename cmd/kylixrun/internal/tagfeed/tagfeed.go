// Package tagfeed is how the tags of a kylixrun --join launcher follow the resizes: the first
// launcher serves every admission to the --join launchers (Serve, Publish), which follow and
// acknowledge them (Follow).
package tagfeed

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"kylix/netio/rendezvous"
)

// The tag feed: how the tags of a kylixrun --join launcher follow the resizes. Only the first
// launcher's rendezvous sees the resizes (OnAdmit), so that launcher serves each of them on a
// second port, written in the job file as "tags", to the --join launchers that ask. Each
// follows them as the first launcher does (renumber) and acknowledges; the first launcher
// waits for the acknowledgements (up to AckWait) before the rendezvous tells anyone of the
// new membership, so a joiner's first line as a member already carries its rank. The feed also
// hands out the --join launchers' names, unique in the job: "j<pid>", or "j<pid>-2" when two
// launchers on different hosts share a PID.
//
// Messages are length-prefixed JSON (4-byte little-endian length), and both sides prove the
// job secret as the rendezvous does (a nonce from each side, HMAC-SHA256 over them and the
// payload), so a stranger neither reads the job's addresses nor moves a tag:
//
//	first launcher → --join launcher  {nonce}
//	--join launcher → first launcher  {nonce, name: "j4711", proof}
//	first launcher → --join launcher  {name: the name granted, proof}
//	first launcher → --join launcher  {seq, adm, proof}               at every resize
//	--join launcher → first launcher  {seq}                            once followed

// AckWait bounds the wait of a resize for a --join launcher's acknowledgement. A launcher
// that misses it (stopped, or on a slow link) is not waited for again until it catches up, so
// it costs the job one such wait; its joiners' lines may carry their old tags meanwhile.
const AckWait = time.Second

// tagHandshakeWait bounds each message of the handshake.
const tagHandshakeWait = 5 * time.Second

// tagMaxMessage bounds a feed message: an admission lists one address per rank.
const tagMaxMessage = 16 << 20

type tagMsg struct {
	Nonce []byte          `json:"nonce,omitempty"`
	Name  string          `json:"name,omitempty"`
	Seq   uint64          `json:"seq,omitempty"`
	Adm   json.RawMessage `json:"adm,omitempty"`
	Proof []byte          `json:"proof,omitempty"`
}

func writeTagMsg(w io.Writer, m *tagMsg) error { return rendezvous.WriteFrame(w, m) }

func readTagMsg(r io.Reader) (*tagMsg, error) {
	m := &tagMsg{}
	if err := rendezvous.ReadFrame(r, tagMaxMessage, m); err != nil {
		return nil, err
	}
	return m, nil
}

func tagProof(secret, label string, serverNonce, clientNonce, payload []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylixrun-tags-v1\x00" + label + "\x00"))
	for _, b := range [][]byte{serverNonce, clientNonce, payload} {
		var l [4]byte
		binary.LittleEndian.PutUint32(l[:], uint32(len(b)))
		mac.Write(l[:])
		mac.Write(b)
	}
	return mac.Sum(nil)
}

func admPayload(seq uint64, adm []byte) []byte {
	return append(strconv.AppendUint(nil, seq, 10), append([]byte{':'}, adm...)...)
}

// tagName is what a --join launcher may ask to be called.
var tagName = regexp.MustCompile(`^j[0-9]{1,12}$`)

// Feed is the first launcher's side.
type Feed struct {
	ln     net.Listener
	secret string

	pub      sync.Mutex // one admission at a time, in seq order: each watcher's sent
	mu       sync.Mutex
	names    map[string]bool
	watchers map[*tagWatcher]bool
	seq      uint64
	closed   bool
}

// tagWatcher is one --join launcher following the feed.
type tagWatcher struct {
	c      net.Conn
	sn, cn []byte
	sent   uint64        // the last admission written (under Feed.pub once in the feed)
	acked  atomic.Uint64 // the last acknowledged
	ack    chan struct{} // a token at each acknowledgement
	gone   chan struct{} // closed when the connection ends
}

// Serve listens on bind (port 0) for --join launchers.
func Serve(bind, secret string) (*Feed, error) {
	host, _, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	f := &Feed{ln: ln, secret: secret, names: map[string]bool{}, watchers: map[*tagWatcher]bool{}}
	go f.acceptLoop()
	return f, nil
}

func (f *Feed) Addr() string { return f.ln.Addr().String() }

// Close stops the feed and ends every watcher's connection.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	ws := make([]*tagWatcher, 0, len(f.watchers))
	for w := range f.watchers {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	f.ln.Close()
	for _, w := range ws {
		w.c.Close()
	}
}

func (f *Feed) acceptLoop() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: try again
			continue
		}
		go f.serve(c)
	}
}

// serve checks a --join launcher's proof, grants it a name and keeps it as a watcher until its
// connection ends.
func (f *Feed) serve(c net.Conn) {
	c.SetDeadline(time.Now().Add(tagHandshakeWait))
	sn := make([]byte, 32)
	rand.Read(sn)
	if writeTagMsg(c, &tagMsg{Nonce: sn}) != nil {
		c.Close()
		return
	}
	m, err := readTagMsg(c)
	if err != nil || !tagName.MatchString(m.Name) || len(m.Nonce) == 0 ||
		!hmac.Equal(m.Proof, tagProof(f.secret, "hello", sn, m.Nonce, []byte(m.Name))) {
		c.Close() // a stranger: nothing to tell it
		return
	}
	w := &tagWatcher{c: c, sn: sn, cn: m.Nonce, ack: make(chan struct{}, 1), gone: make(chan struct{})}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		c.Close()
		return
	}
	name := m.Name
	for i := 2; f.names[name]; i++ {
		name = m.Name + "-" + strconv.Itoa(i)
	}
	f.names[name] = true
	// Admissions from here on reach w: it is in the feed before it hears its name, so before
	// its launcher starts a joiner.
	w.sent = f.seq
	w.acked.Store(f.seq)
	f.watchers[w] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.watchers, w)
		f.mu.Unlock()
		close(w.gone)
		c.Close()
	}()
	if writeTagMsg(c, &tagMsg{Name: name, Proof: tagProof(f.secret, "welcome", sn, w.cn, []byte(name))}) != nil {
		return
	}
	c.SetDeadline(time.Time{})
	for {
		m, err := readTagMsg(c)
		if err != nil {
			return
		}
		w.acked.Store(max(w.acked.Load(), m.Seq))
		select {
		case w.ack <- struct{}{}:
		default:
		}
	}
}

// publish sends adm to every watcher and waits, up to AckWait, for those that were up to
// date to acknowledge it. Called on the rendezvous' goroutine, one admission at a time, before
// anyone hears of adm.
func (f *Feed) Publish(adm rendezvous.Admitted) {
	b, err := json.Marshal(adm)
	if err != nil {
		return
	}
	f.pub.Lock()
	defer f.pub.Unlock()
	f.mu.Lock()
	f.seq++
	seq := f.seq
	var ws []*tagWatcher
	for w := range f.watchers {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	deadline := time.Now().Add(AckWait)
	var wait []*tagWatcher
	for _, w := range ws {
		current := w.acked.Load() == w.sent
		w.c.SetWriteDeadline(deadline)
		if writeTagMsg(w.c, &tagMsg{Seq: seq, Adm: b, Proof: tagProof(f.secret, "adm", w.sn, w.cn, admPayload(seq, b))}) != nil {
			w.c.Close() // its serve goroutine drops it
			continue
		}
		w.sent = seq
		if current {
			wait = append(wait, w)
		}
	}
	for _, w := range wait {
		tm := time.NewTimer(max(time.Until(deadline), 0))
		for w.acked.Load() < seq {
			select {
			case <-w.ack:
				continue
			case <-w.gone:
			case <-tm.C:
			}
			break
		}
		tm.Stop()
	}
}

// Follow is the --join launcher's side: it asks the feed at addr for the name want (or
// one like it), and then calls follow with every admission, in order, acknowledging each once
// follow returned. stop ends the following.
func Follow(addr, secret, want string, follow func(rendezvous.Admitted)) (name string, stop func(), err error) {
	c, err := net.DialTimeout("tcp", addr, tagHandshakeWait)
	if err != nil {
		return "", nil, err
	}
	c.SetDeadline(time.Now().Add(tagHandshakeWait))
	m, err := readTagMsg(c)
	if err != nil || len(m.Nonce) == 0 {
		c.Close()
		return "", nil, fmt.Errorf("%s does not speak the tag feed: %v", addr, err)
	}
	sn := m.Nonce
	cn := make([]byte, 32)
	rand.Read(cn)
	if err := writeTagMsg(c, &tagMsg{Nonce: cn, Name: want, Proof: tagProof(secret, "hello", sn, cn, []byte(want))}); err != nil {
		c.Close()
		return "", nil, err
	}
	m, err = readTagMsg(c)
	if err != nil {
		c.Close()
		return "", nil, fmt.Errorf("%s refused this launcher (wrong secret or job?): %v", addr, err)
	}
	if !hmac.Equal(m.Proof, tagProof(secret, "welcome", sn, cn, []byte(m.Name))) || m.Name == "" {
		c.Close()
		return "", nil, fmt.Errorf("%s failed authentication: wrong secret", addr)
	}
	c.SetDeadline(time.Time{})
	go func() {
		defer c.Close()
		var last uint64
		for {
			m, err := readTagMsg(c)
			if err != nil || m.Seq <= last ||
				!hmac.Equal(m.Proof, tagProof(secret, "adm", sn, cn, admPayload(m.Seq, m.Adm))) {
				return
			}
			var adm rendezvous.Admitted
			if json.Unmarshal(m.Adm, &adm) != nil {
				return
			}
			last = m.Seq
			follow(adm)
			if writeTagMsg(c, &tagMsg{Seq: m.Seq}) != nil {
				return
			}
		}
	}()
	return m.Name, func() { c.Close() }, nil
}
