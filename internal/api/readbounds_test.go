package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
)

// clientFrom is an HTTP client whose connections come from ip (a loopback
// address: 127.0.0.2 and 127.0.0.3 are two clients to the API).
func clientFrom(ip net.IP) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext}}
}

// getCode GETs url and returns the answer's status, -1 when none came.
func getCode(hc *http.Client, url string) int {
	resp, err := hc.Get(url)
	if err != nil {
		return -1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Issue 28 finding 1: one client sending 200 GET / a second from
// 127.0.0.2 for 4 s, at the default limits, while another reads
// /api/prices from 127.0.0.3 ten times a second. The flood is refused by
// its own limit (429) before it spends the process's reads a second, so
// every one of the other client's reads is answered 200. (Before the fix
// the flood spent the process's tokens first: about half of them 503.)
func TestOneClientsReadFloodLeavesAnotherAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	flooder, other := clientFrom(net.IPv4(127, 0, 0, 2)), clientFrom(net.IPv4(127, 0, 0, 3))
	const (
		perSecond = 200
		window    = 4 * time.Second
	)
	var (
		mu     sync.Mutex
		floods = map[int]int{}
		reads  = map[int]int{}
		wg     sync.WaitGroup
	)
	began := time.Now()
	wg.Go(func() {
		var sent sync.WaitGroup
		for i := 0; time.Since(began) < window; i++ {
			time.Sleep(time.Until(began.Add(time.Duration(i) * time.Second / perSecond)))
			sent.Go(func() {
				code := getCode(flooder, f.srv.URL+"/")
				mu.Lock()
				floods[code]++
				mu.Unlock()
			})
		}
		sent.Wait()
	})
	wg.Go(func() {
		for i := 0; time.Since(began) < window; i++ {
			time.Sleep(time.Until(began.Add(time.Duration(i) * 100 * time.Millisecond)))
			code := getCode(other, f.srv.URL+"/api/prices?token="+stx)
			mu.Lock()
			reads[code]++
			mu.Unlock()
		}
	})
	wg.Wait()
	t.Logf("figures: GET / at %d/s from 127.0.0.2 for %s: %v; GET /api/prices from 127.0.0.3: %v", perSecond, window, floods, reads)
	require.Positive(t, floods[http.StatusTooManyRequests], "the flood went past its own limit")
	require.Len(t, reads, 1, "every read of the other client answered alike: %v", reads)
	require.Positive(t, reads[http.StatusOK], "every read of the other client answered 200: %v", reads)
}

// bigGatherer is a metrics registry whose text is about size bytes.
func bigGatherer(size int) prometheus.Gatherer {
	// go_: a family the public listener serves (publicFamilyPrefixes).
	name, help, gauge := "go_test_big", "A big family.", dto.MetricType_GAUGE
	mf := &dto.MetricFamily{Name: &name, Help: &help, Type: &gauge}
	label := "series"
	pad := strings.Repeat("x", 100)
	for i := 0; i*130 < size; i++ {
		v, lv := float64(i), fmt.Sprintf("%s%d", pad, i)
		mf.Metric = append(mf.Metric, &dto.Metric{Label: []*dto.LabelPair{{Name: &label, Value: &lv}}, Gauge: &dto.Gauge{Value: &v}})
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return []*dto.MetricFamily{mf}, nil })
}

// smallBuffers shrinks the send buffer of every accepted connection, so
// that an answer a client does not read blocks its writer after a few
// kilobytes rather than after the kernel's megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Issue 28 finding 3: slowReaders connections from 127.0.0.2 ask for a
// cached 2 MiB /metrics and read only its status line, on a server with
// as many read slots. They hold no slot (another client's read is served
// 200) and no copy of the answer each (the heap grows by less than a
// quarter of slowReaders copies). Before the fix, http.TimeoutHandler
// buffered a copy per request and the slot was held until it was written.
// Not parallel: it measures the heap.
func TestSlowReadersHoldNeitherSlotsNorCopies(t *testing.T) {
	const (
		slowReaders = 16
		bodySize    = 2 << 20
	)
	f := newFixture(t, func(o *api.Options) {
		o.Gatherer = bigGatherer(bodySize)
		o.MaxReadsInFlight = slowReaders
	})
	srv := httptest.NewUnstartedServer(f.h)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	// The answer is cached once, read whole.
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Greater(t, len(body), bodySize)

	before := heapInUse()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)},
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		}}
	for range slowReaders {
		c, err := dialer.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: pacer\r\n\r\n")
		require.NoError(t, err)
		// The status line says the server is writing the answer; the rest
		// is never read.
		line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, "200")
	}
	grew := int64(heapInUse()) - int64(before)

	code := getCode(clientFrom(net.IPv4(127, 0, 0, 3)), srv.URL+"/api/prices?token="+stx)
	t.Logf("figures: %d connections not reading a cached %d KiB answer: heap grew %d KiB; another client's read: %d",
		slowReaders, len(body)>>10, grew>>10, code)
	require.Equal(t, http.StatusOK, code, "the slow readers hold the read slots")
	require.Less(t, grew, int64(slowReaders*len(body)/4), "the slow readers hold a copy of the answer each")
}
