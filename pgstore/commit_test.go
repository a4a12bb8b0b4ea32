package pgstore_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/pgtest"
	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/pgstore"
)

// cuttingProxy relays connections to a PostgreSQL server and, once armed,
// cuts the first connection that sends cutOn: the client's side closes
// before any answer, the server's side only after the message reached it.
// Cut on COMMIT, the client cannot know whether its transaction committed.
type cuttingProxy struct {
	ln     net.Listener
	server string
	cutOn  []byte // what the client sends that arms the cut
	armed  atomic.Bool
	wg     sync.WaitGroup
}

// pgx sends COMMIT as a simple query: 'Q', its length, the text, a NUL.
var commitMsg = append([]byte{'Q', 0, 0, 0, 11}, "commit\x00"...)

func newCuttingProxy(t *testing.T, server string, cutOn []byte) *cuttingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{ln: ln, server: server, cutOn: cutOn}
	p.wg.Go(p.accept)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cuttingProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.server)
		if err != nil {
			client.Close()
			continue
		}
		p.wg.Go(func() { io.Copy(client, server); client.Close() })
		p.wg.Go(func() { p.relay(client, server) })
	}
}

func (p *cuttingProxy) relay(client, server net.Conn) {
	defer server.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], p.cutOn) && p.armed.CompareAndSwap(true, false) {
				client.Close()
				server.Write(buf[:n])
				time.Sleep(200 * time.Millisecond) // let the server read it before its side closes
				return
			}
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestCommitWithUnknownOutcomeIsAnError: a connection lost after COMMIT
// was sent is reported as EUNAVAILABLE, with fn run once, never as done
// and never run again (a second run could apply the write twice).
func TestCommitWithUnknownOutcomeIsAnError(t *testing.T) {
	proxy, st := openBehindProxy(t, commitMsg)
	ctx := context.Background()
	var err error

	runs := 0
	proxy.armed.Store(true)
	err = st.Update(ctx, func(tx memory.Tx) error {
		runs++
		return tx.PutSlot(&memory.Slot{ID: "s1", SubjectID: "a"})
	})
	if memory.ErrorCode(err) != memory.EUNAVAILABLE || !strings.Contains(err.Error(), "may or may not") {
		t.Fatalf("update cut during commit: %v, want an unavailable error saying the outcome is unknown", err)
	}
	if runs != 1 {
		t.Fatalf("fn ran %d times, want once", runs)
	}
	// The store works on: the pool replaced the broken connection.
	if err := st.Update(ctx, func(tx memory.Tx) error { return tx.PutSlot(&memory.Slot{ID: "s2", SubjectID: "a"}) }); err != nil {
		t.Fatalf("update after the cut: %v", err)
	}
}

// openBehindProxy opens a store on a fresh database through a proxy that
// cuts on cutOn once armed.
func openBehindProxy(t *testing.T, cutOn []byte) (*cuttingProxy, *pgstore.Store) {
	t.Helper()
	u, err := url.Parse(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCuttingProxy(t, u.Host, cutOn)
	u.Host = proxy.ln.Addr().String()
	return proxy, open(t, u.String())
}

// TestViewIsNotRunAgainAfterALostConnection: a View whose connection is
// lost while fn reads fails with EUNAVAILABLE after one run of fn (a View's
// fn may keep what it read: running it again could count things twice).
func TestViewIsNotRunAgainAfterALostConnection(t *testing.T) {
	proxy, st := openBehindProxy(t, []byte("FROM memgate_slots WHERE id"))
	ctx := context.Background()
	proxy.armed.Store(true)
	runs := 0
	err := st.View(ctx, func(tx memory.ReadTx) error {
		runs++
		_, err := tx.Slot("s1")
		return err
	})
	if memory.ErrorCode(err) != memory.EUNAVAILABLE || runs != 1 {
		t.Fatalf("view cut while reading: %v after %d runs, want code %s after 1", err, runs, memory.EUNAVAILABLE)
	}
	// An Update's fn may run again (memory.Store allows it): the store
	// takes a fresh connection and the write is done.
	proxy.armed.Store(true)
	runs = 0
	err = st.Update(ctx, func(tx memory.Tx) error {
		runs++
		if _, err := tx.Slot("s1"); memory.ErrorCode(err) != memory.ENOTFOUND {
			return err
		}
		return tx.PutSlot(&memory.Slot{ID: "s1", SubjectID: "a"})
	})
	if err != nil || runs != 2 {
		t.Fatalf("update cut while reading: %v after %d runs, want success after 2", err, runs)
	}
}
