package linkcond_test

// The Go client against the real linkcond binary (LINKCOND_BINARY, else linkcond on PATH), on loopback only.
// Nothing here depends on the machine's speed: every wait is for a condition, bounded by a deadline, and the only
// timing assertion is a lower bound (a round trip takes at least the profile's two delays, less a tolerance).

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"linkcond"
)

// testContext bounds each test's calls.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// echoServer is 127.0.0.1:PORT of a server that echoes every byte back.
func echoServer(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() { defer conn.Close(); io.Copy(conn, conn) }()
		}
	}()
	return listener.Addr().String()
}

// pageServer is an HTTP server answering "page PATH".
func pageServer(t *testing.T) *httptest.Server {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "page %s\n", r.URL.Path)
	}))
	t.Cleanup(server.Close)
	return server
}

func start(t *testing.T, options linkcond.Options) *linkcond.Linkcond {
	t.Helper()
	link, err := linkcond.Start(testContext(t), options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := link.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("linkcond stderr:\n%s", link.Stderr())
		}
	})
	return link
}

func dial(t *testing.T, address string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	t.Cleanup(func() { conn.Close() })
	return conn
}

func status(t *testing.T, link *linkcond.Linkcond) *linkcond.Status {
	t.Helper()
	s, err := link.Status(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRelaysBytesExactlyThroughEachAddressInOrder(t *testing.T) {
	echo, page := echoServer(t), pageServer(t)
	pageAddress := strings.TrimPrefix(page.URL, "http://")
	link := start(t, linkcond.Options{Profile: "3g", Upstreams: []string{echo, pageAddress}})
	if got := len(link.Addresses()); got != 2 {
		t.Fatalf("Addresses: %d, want 2", got)
	}
	payload := make([]byte, 24*1024)
	rand.Read(payload)
	conn := dial(t, link.Addresses()[0])
	go conn.Write(payload)
	echoed := make([]byte, len(payload))
	if _, err := io.ReadFull(conn, echoed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(echoed, payload) {
		t.Fatal("the echoed bytes differ from those sent")
	}
	response, err := http.Get("http://" + link.Addresses()[1] + "/second")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if string(body) != "page /second\n" {
		t.Fatalf("second address answered %q", body)
	}
	if s := status(t, link); s.Listeners[0].Downlink.BytesDelivered < len(payload) || s.Listeners[0].Upstream != echo {
		t.Fatalf("status: %+v", s.Listeners[0])
	}
}

func TestARoundTripTakesAtLeastTheProfilesDelays(t *testing.T) {
	link := start(t, linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}})
	conn := dial(t, link.Addresses()[0])
	started := time.Now()
	conn.Write([]byte("x"))
	if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	// 3g: 100 ms each way; 50 ms tolerance.
	if elapsed := time.Since(started); elapsed < 150*time.Millisecond {
		t.Fatalf("a round trip took %v, less than 3g's two 100 ms delays", elapsed)
	}
}

func TestUseAndSetChangeWhatStatusReports(t *testing.T) {
	ctx := testContext(t)
	link := start(t, linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}})
	if got := status(t, link).Profile; got != "3g" {
		t.Fatalf("profile %q", got)
	}
	resolved, err := link.Use(ctx, "edge")
	if err != nil || !strings.Contains(resolved, "downlink.delay = 400 ms") {
		t.Fatalf("Use: %q, %v", resolved, err)
	}
	if got := status(t, link).Profile; got != "edge" {
		t.Fatalf("profile %q", got)
	}
	if err := link.Set(ctx, "downlink.delay", "300 ms"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, link).ProfileSummary; !strings.Contains(got, "300 ms/440 ms delay") {
		t.Fatalf("summary %q", got)
	}
	if err := link.SetAll(ctx, map[string]string{"loss": "2 %", "uplink.delay": "10 ms"}); err != nil {
		t.Fatal(err)
	}
	s := status(t, link)
	if !strings.Contains(s.ProfileSummary, "300 ms/10 ms delay") || !strings.Contains(s.ProfileSummary, "2 % loss") {
		t.Fatalf("summary %q", s.ProfileSummary)
	}
	if s.Raw["profile"] != "edge" {
		t.Fatalf("Raw: %v", s.Raw)
	}
	if profile, err := link.Profile(ctx); err != nil || !strings.Contains(profile, "uplink.delay = 10 ms") {
		t.Fatalf("Profile: %q, %v", profile, err)
	}
}

func TestOfflineAndOnline(t *testing.T) {
	ctx := testContext(t)
	link := start(t, linkcond.Options{Profile: "none", Upstreams: []string{echoServer(t)}})
	if err := link.Offline(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := status(t, link).Offline; got != "refuse" {
		t.Fatalf("offline %q", got)
	}
	if conn, err := net.DialTimeout("tcp", link.Addresses()[0], 30*time.Second); err == nil {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		conn.Write([]byte("hello"))
		if n, _ := conn.Read(make([]byte, 5)); n != 0 {
			t.Fatal("a connection made while offline was relayed")
		}
		conn.Close()
	}
	if err := link.Offline(ctx, linkcond.Blackhole); err != nil {
		t.Fatal(err)
	}
	if got := status(t, link).Offline; got != "blackhole" {
		t.Fatalf("offline %q", got)
	}
	if err := link.Online(ctx); err != nil {
		t.Fatal(err)
	}
	if got := status(t, link).Offline; got != "" {
		t.Fatalf("offline %q after Online", got)
	}
	conn := dial(t, link.Addresses()[0])
	conn.Write([]byte("hello"))
	if _, err := io.ReadFull(conn, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
}

func TestResetEndsLiveConnections(t *testing.T) {
	link := start(t, linkcond.Options{Profile: "none", Upstreams: []string{echoServer(t)}})
	conn := dial(t, link.Addresses()[0])
	conn.Write([]byte("ping"))
	if _, err := io.ReadFull(conn, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := link.Reset(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after Reset the connection read %d bytes, %v", n, err)
	}
}

func TestScenariosByNameAndByText(t *testing.T) {
	ctx := testContext(t)
	link := start(t, linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}})
	if err := link.Scenario(ctx, "subway"); err != nil {
		t.Fatal(err)
	}
	if s := status(t, link); s.Scenario == nil || s.Scenario.Name != "subway" {
		t.Fatalf("scenario %+v", s.Scenario)
	}
	if err := link.StopScenario(ctx); err != nil {
		t.Fatal(err)
	}
	if s := status(t, link); s.Scenario != nil {
		t.Fatalf("scenario %+v after StopScenario", s.Scenario)
	}
	if err := link.Scenario(ctx, "0s edge\n1h lte\n"); err != nil {
		t.Fatal(err)
	}
	s := status(t, link)
	if s.Profile != "edge" {
		t.Fatalf("profile %q", s.Profile)
	}
	if sc := s.Scenario; sc == nil || sc.CurrentStep == nil || *sc.CurrentStep != "edge" || sc.NextStep == nil ||
		*sc.NextStep != "lte" || sc.SecondsToNextStep == nil || *sc.SecondsToNextStep <= 0 {
		t.Fatalf("scenario %+v", s.Scenario)
	}
	if s.Handshake == nil || s.Handshake.RoundTripSeconds <= 0 {
		t.Fatalf("handshake %+v", s.Handshake)
	}
	if rate := s.Listeners[0].Downlink.BandwidthBitsPerSecond; rate == nil || *rate <= 0 {
		t.Fatalf("downlink bandwidth %v", rate)
	}
	if err := link.Scenario(ctx, "no-such-scenario"); err == nil || !strings.Contains(err.Error(), "subway") {
		t.Fatalf("an unknown scenario name: %v", err)
	}
	var apiError *linkcond.APIError
	if err := link.Scenario(ctx, "0s no-such-profile\n"); !errors.As(err, &apiError) || apiError.StatusCode != 400 {
		t.Fatalf("a scenario naming an unknown profile: %v", err)
	}
}

func TestABadProfileNameGivesLinkcondsMessage(t *testing.T) {
	ctx := testContext(t)
	link := start(t, linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}})
	_, err := link.Use(ctx, "no-such-profile")
	var apiError *linkcond.APIError
	if !errors.As(err, &apiError) {
		t.Fatalf("Use of an unknown profile: %v", err)
	}
	if apiError.StatusCode != 400 || !strings.Contains(apiError.Message, `no built-in profile "no-such-profile"`) ||
		apiError.Method != "PUT" || apiError.Path != "/profile" {
		t.Fatalf("%+v", apiError)
	}
	if err := link.Set(ctx, "no.such.key", "1"); !errors.As(err, &apiError) || !strings.Contains(apiError.Message, `unknown key "no.such.key"`) {
		t.Fatalf("Set of an unknown key: %v", err)
	}
	if got := status(t, link).Profile; got != "3g" {
		t.Fatalf("profile %q", got)
	}
}

func TestAFailedStartCarriesStderrAndStatus(t *testing.T) {
	ctx := testContext(t)
	_, err := linkcond.Start(ctx, linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}, Args: []string{"--no-such-option"}})
	var startError *linkcond.StartError
	if !errors.As(err, &startError) {
		t.Fatalf("Start with a bad option: %v", err)
	}
	if startError.ExitStatus != 2 || !strings.Contains(startError.Stderr, "--no-such-option") || !strings.Contains(err.Error(), "--no-such-option") {
		t.Fatalf("%+v", startError)
	}
	_, err = linkcond.Start(ctx, linkcond.Options{Profile: "no-such-profile", Proxy: true})
	if !errors.As(err, &startError) || !strings.Contains(err.Error(), `no built-in profile "no-such-profile"`) {
		t.Fatalf("Start with an unknown profile: %v", err)
	}
	_, err = linkcond.Start(ctx, linkcond.Options{Profile: "3g", Proxy: true, Binary: t.TempDir() + "/no-linkcond"})
	if err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Fatalf("Start with a missing binary: %v", err)
	}
	if _, err = linkcond.Start(ctx, linkcond.Options{Profile: "3g"}); err == nil {
		t.Fatal("Start with neither upstreams nor a proxy succeeded")
	}
}

func TestRequestsAfterStopSaySo(t *testing.T) {
	link, err := linkcond.Start(testContext(t), linkcond.Options{Profile: "3g", Upstreams: []string{echoServer(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := link.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := link.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, exited := link.ExitStatus(); !exited || status != 0 {
		t.Fatalf("exit status %d, exited %v", status, exited)
	}
	if _, err := link.Status(testContext(t)); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Status after Stop: %v", err)
	}
}

func TestProxyModeGivesWorkingProxyURLs(t *testing.T) {
	page := pageServer(t)
	link := start(t, linkcond.Options{Profile: "3g", Proxy: true})
	if !strings.HasPrefix(link.ProxyURL(), "socks5h://127.0.0.1:") || !strings.HasPrefix(link.ControlURL(), "http://127.0.0.1:") {
		t.Fatalf("ProxyURL %q, ControlURL %q", link.ProxyURL(), link.ControlURL())
	}
	get := func(proxy string, path string) string {
		t.Helper()
		proxyURL, err := url.Parse(proxy)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 60 * time.Second}
		response, err := client.Get(page.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		body, _ := io.ReadAll(response.Body)
		return string(body)
	}
	if got := get(link.HTTPProxyURL(), "/through-http-proxy"); got != "page /through-http-proxy\n" {
		t.Fatalf("through the HTTP proxy: %q", got)
	}
	// Go's transport knows the scheme as socks5 (socks5h since Go 1.22); the proxy is the same.
	if got := get(strings.Replace(link.ProxyURL(), "socks5h://", "socks5://", 1), "/through-socks"); got != "page /through-socks\n" {
		t.Fatalf("through SOCKS5: %q", got)
	}
	s := status(t, link)
	if len(s.Listeners) != 1 || s.Listeners[0].Kind != "proxy" || s.Listeners[0].ConnectionsAccepted < 2 {
		t.Fatalf("listeners %+v", s.Listeners)
	}
	plain := start(t, linkcond.Options{Profile: "none", Upstreams: []string{echoServer(t)}})
	if plain.ProxyURL() != "" || plain.HTTPProxyURL() != "" {
		t.Fatal("a linkcond without a proxy gave proxy URLs")
	}
}

func TestExecReturnsTheProgramsStatusAndOutput(t *testing.T) {
	ctx := testContext(t)
	result, err := linkcond.Exec(ctx, "3g", []string{"sh", "-c", "echo out; echo err >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if result.Status != 3 || string(result.Stdout) != "out\n" || !bytes.Contains(result.Stderr, []byte("err")) {
		t.Fatalf("%d %q %q", result.Status, result.Stdout, result.Stderr)
	}
	if result, err := linkcond.Exec(ctx, "no-such-profile", []string{"true"}); err != nil || result.Status != 2 {
		t.Fatalf("an unknown profile: %d, %v", result.Status, err)
	}
	result, err = linkcond.Exec(ctx, "none", []string{"cat"}, linkcond.ExecOptions{Stdin: strings.NewReader("piped\n")})
	if err != nil || result.Status != 0 || string(result.Stdout) != "piped\n" {
		t.Fatalf("with stdin: %d %q, %v", result.Status, result.Stdout, err)
	}
}

func fakeLinkcond(t *testing.T, script string) string {
	path := t.TempDir() + "/fake-linkcond"
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOutputThatIsNotReadyLinesIsNoParseError(t *testing.T) {
	binary := fakeLinkcond(t, "echo 'something else'; echo 'ready'; echo 'linkcond: broke' >&2; exit 1")
	_, err := linkcond.Start(testContext(t), linkcond.Options{Profile: "3g", Proxy: true, Binary: binary})
	var startError *linkcond.StartError
	if !errors.As(err, &startError) || startError.ExitStatus != 1 || !strings.Contains(startError.Stderr, "linkcond: broke") {
		t.Fatalf("%v", err)
	}
}

func TestAStartThatNeverSaysReadyIsStopped(t *testing.T) {
	binary := fakeLinkcond(t, "echo 'waiting' >&2; exec sleep 600")
	_, err := linkcond.Start(testContext(t), linkcond.Options{Profile: "3g", Proxy: true, Binary: binary, StartTimeout: time.Second})
	var startError *linkcond.StartError
	if !errors.As(err, &startError) || startError.ExitStatus != -1 || !strings.Contains(startError.Stderr, "waiting") ||
		!strings.Contains(err.Error(), `no "ready control" line within 1s`) {
		t.Fatalf("%v", err)
	}
}
