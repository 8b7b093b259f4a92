package webhook_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/webhook"
)

func TestParseLadder(t *testing.T) {
	t.Parallel()
	l, err := webhook.ParseLadder(webhook.DefaultLadder)
	require.NoError(t, err)
	require.Equal(t, webhook.Ladder{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 2 * time.Hour}, l)
	require.Equal(t, "1m0s,5m0s,15m0s,1h0m0s,2h0m0s", l.String())
	require.Equal(t, 3*time.Hour+21*time.Minute, l.Total())

	l, err = webhook.ParseLadder(" 1s, 2s ,3s")
	require.NoError(t, err)
	require.Equal(t, webhook.Ladder{time.Second, 2 * time.Second, 3 * time.Second}, l)

	for _, give := range []string{"", "1m,", ",1m", "1m,,5m", "soon", "1m,-5m", "0s", "1ns", "8d", "200h",
		strings.Repeat("1m,", 20) + "1m"} {
		_, err := webhook.ParseLadder(give)
		require.Error(t, err, "give %q", give)
	}
}

func TestLadderNext(t *testing.T) {
	t.Parallel()
	l := webhook.Ladder{time.Minute, 5 * time.Minute}
	for _, tc := range []struct {
		name       string
		failed     int
		retryAfter time.Duration
		u          float64
		want       time.Duration
		wantOK     bool
	}{
		{name: "first step, low jitter", failed: 1, u: 0, want: 54 * time.Second, wantOK: true},
		{name: "first step, mid", failed: 1, u: 0.5, want: time.Minute, wantOK: true},
		{name: "first step, high jitter", failed: 1, u: 0.999999, want: 66 * time.Second, wantOK: true},
		{name: "second step", failed: 2, u: 0.5, want: 5 * time.Minute, wantOK: true},
		{name: "a longer Retry-After wins", failed: 1, retryAfter: 90 * time.Second, u: 0.5, want: 90 * time.Second, wantOK: true},
		{name: "a shorter Retry-After loses", failed: 2, retryAfter: 90 * time.Second, u: 0.5, want: 5 * time.Minute, wantOK: true},
		{name: "Retry-After is capped", failed: 1, retryAfter: 100 * time.Hour, u: 0.5, want: webhook.MaxRetryAfter, wantOK: true},
		{name: "spent", failed: 3, u: 0.5},
		{name: "nonsense", failed: 0, u: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := l.Next(tc.failed, tc.retryAfter, tc.u)
			require.Equal(t, tc.wantOK, ok)
			require.InDelta(t, tc.want.Seconds(), got.Seconds(), 0.001)
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		give string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {" 120 ", 2 * time.Minute}, {"0", 0}, {"-5", 0}, {"soon", 0},
		{"99999999999", webhook.MaxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		require.Equal(t, tc.want, webhook.ParseRetryAfter(tc.give, now), "give %q", tc.give)
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	for _, give := range []string{"https://hooks.example.com/pacer", "http://127.0.0.1:9000/hook?token=abc", "https://[::1]:8443/x"} {
		got, err := webhook.ValidateURL(give)
		require.NoError(t, err, give)
		require.Equal(t, give, got)
	}
	for _, give := range []string{
		"", " https://a.example", "ftp://a.example/x", "https://", "https:///path", "mailto:a@b.example",
		"https://user:pass@a.example/x", "https://token@a.example/x", "https://a.example/x#frag",
		"https://a.example:0/", "https://a.example:999999/", "//a.example/x", "a.example/x",
		"https://a.example/" + strings.Repeat("x", webhook.MaxURLLength),
	} {
		_, err := webhook.ValidateURL(give)
		require.ErrorIs(t, err, webhook.ErrBadURL, "give %q", give)
		if len(give) > 10 {
			require.NotContains(t, err.Error(), give[8:], "the error never repeats the URL")
		}
	}
}

func TestIDs(t *testing.T) {
	t.Parallel()
	sub := webhook.NewSubscriberID()
	require.True(t, webhook.ValidSubscriberID(sub), sub)
	require.NotEqual(t, sub, webhook.NewSubscriberID())
	id := webhook.DeliveryID(sub, "hourly", time.Date(2026, 11, 2, 9, 0, 0, 0, time.FixedZone("x", 3600)))
	require.Equal(t, sub+"-hourly-20261102T0800Z", id)
	require.True(t, webhook.ValidDeliveryID(id))
	require.True(t, webhook.ValidDeliveryID(id+"-c1"), "a correction's id")
	require.True(t, webhook.ValidDeliveryID(id+"-c12"))
	for _, bad := range []string{"", sub, sub + "-weekly-20261102T0800Z", "sub_x-hourly-20261102T0800Z", id + "x", "../" + id,
		id + "-c0", id + "-c", id + "-c1-c2", id + "-c01"} {
		require.False(t, webhook.ValidDeliveryID(bad), bad)
	}
	s1, s2 := webhook.NewSecret(), webhook.NewSecret()
	require.True(t, strings.HasPrefix(s1, webhook.SecretPrefix))
	require.NotEqual(t, s1, s2)
}

// Signatures are checked by the standard-webhooks library, the way a
// subscriber checks them: valid as sent, invalid once the body is touched,
// the id changed, the secret wrong or the timestamp old.
func TestSignVerifiesWithTheLibrary(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	m := webhook.Message{ID: "sub_aaaaaaaaaaaaaaaa-hourly-20261102T0900Z", Secret: secret, Body: []byte(`{"type":"rollup.hourly","data":{"x":1}}`)}
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)

	h, err := webhook.Sign(m, time.Now())
	require.NoError(t, err)
	require.Regexp(t, `^v1,[A-Za-z0-9+/]+=*$`, h.Get("webhook-signature"))
	require.NoError(t, wh.Verify(m.Body, h))

	require.ErrorIs(t, wh.Verify([]byte(`{"type":"rollup.hourly","data":{"x":2}}`), h), standardwebhooks.ErrNoMatchingSignature)
	moved := h.Clone()
	moved.Set("webhook-id", "sub_aaaaaaaaaaaaaaaa-hourly-20261102T1000Z")
	require.ErrorIs(t, wh.Verify(m.Body, moved), standardwebhooks.ErrNoMatchingSignature)
	other, err := standardwebhooks.NewWebhook(webhook.NewSecret())
	require.NoError(t, err)
	require.ErrorIs(t, other.Verify(m.Body, h), standardwebhooks.ErrNoMatchingSignature)

	old, err := webhook.Sign(m, time.Now().Add(-10*time.Minute))
	require.NoError(t, err)
	require.ErrorIs(t, wh.Verify(m.Body, old), standardwebhooks.ErrMessageTooOld)
	require.NoError(t, wh.VerifyIgnoringTimestamp(m.Body, old), "only the timestamp is wrong")

	_, err = webhook.Sign(webhook.Message{Secret: "whsec_not base64!"}, time.Now())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "not base64!")
}

func TestSendOutcomes(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL + "/hook?token=s3cr3t"
	}
	// The receivers are on loopback.
	s := webhook.NewSender(webhook.SenderOptions{Timeout: 300 * time.Millisecond, AllowPrivate: true})
	send := func(url string) webhook.Outcome {
		return s.Send(t.Context(), webhook.Message{ID: "id-1", URL: url, Secret: secret, Body: []byte(`{}`)})
	}
	var got http.Header
	out := send(serve(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		if string(b) != "{}" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	require.Equal(t, webhook.Delivered, out.Result)
	require.Equal(t, http.StatusAccepted, out.Status)
	require.Equal(t, "id-1", got.Get("webhook-id"))
	require.Equal(t, "application/json", got.Get("Content-Type"))
	ts, err := strconv.ParseInt(got.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), ts, 5)

	for _, tc := range []struct {
		name       string
		h          http.HandlerFunc
		want       webhook.Result
		wantStatus int
		wantAfter  time.Duration
	}{
		{name: "5xx", h: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502) }, want: webhook.HTTPError, wantStatus: 502},
		{name: "429", h: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
		}, want: webhook.HTTPError, wantStatus: 429, wantAfter: 7 * time.Second},
		{name: "503 with Retry-After", h: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "4")
			w.WriteHeader(503)
		}, want: webhook.HTTPError, wantStatus: 503, wantAfter: 4 * time.Second},
		{name: "500 ignores Retry-After", h: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "4")
			w.WriteHeader(500)
		}, want: webhook.HTTPError, wantStatus: 500},
		{name: "410", h: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(410) }, want: webhook.Gone, wantStatus: 410},
		{name: "redirect is not followed", h: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/", http.StatusTemporaryRedirect)
		}, want: webhook.HTTPError, wantStatus: 307},
		{name: "headers past the bound", h: func(w http.ResponseWriter, _ *http.Request) {
			// Go's default would take 10 MB of these; 128 attempts in
			// flight would hold over a GB.
			w.Header().Set("X-Pad", strings.Repeat("a", 2*webhook.MaxResponseHeaderBytes))
			w.WriteHeader(200)
		}, want: webhook.Network},
		{name: "timeout", h: func(w http.ResponseWriter, r *http.Request) {
			// The server notices a hang-up only once the body is read.
			_, _ = io.ReadAll(r.Body)
			<-r.Context().Done()
		}, want: webhook.Timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := send(serve(tc.h))
			require.Equal(t, tc.want, out.Result)
			require.Equal(t, tc.wantStatus, out.Status)
			require.Equal(t, tc.wantAfter, out.RetryAfter)
			require.NotContains(t, out.Error, "s3cr3t", "no URL in an outcome")
		})
	}

	// A refused connection fails fast and says so without the URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	out = send("http://" + addr + "/hook?token=s3cr3t")
	require.Equal(t, webhook.Network, out.Result)
	require.NotContains(t, out.Error, "s3cr3t")
	require.NotContains(t, out.Error, addr)

	// A cancelled context ends the attempt at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out = s.Send(ctx, webhook.Message{ID: "x", URL: serve(func(http.ResponseWriter, *http.Request) {}), Secret: secret, Body: []byte(`{}`)})
	require.Equal(t, webhook.Network, out.Result)
	require.Equal(t, "attempt cancelled", out.Error)
}
