// Package linkcond starts and steers linkcond, the network link conditioner, from Go tests.
//
//	link, err := linkcond.Start(ctx, linkcond.Options{Profile: "3g", Upstreams: []string{"127.0.0.1:8080"}})
//	if err != nil { t.Fatal(err) }
//	defer link.Stop(context.Background())
//	client := NewClient(link.Addresses()[0])   // "127.0.0.1:PORT", relayed to 127.0.0.1:8080 through 3G
//	err = link.Offline(ctx, linkcond.Refuse)    // the train enters the tunnel
//
// It speaks only linkcond's command line and its control endpoint, and needs the linkcond binary on PATH or in
// LINKCOND_BINARY. Every method is safe from several goroutines.
package linkcond

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says how to start linkcond run.
type Options struct {
	// Profile is a built-in profile's name or a profile file's path (default "none").
	Profile string
	// Upstreams are HOST:PORT each; linkcond listens on a free loopback port for each, in order (Addresses).
	Upstreams []string
	// Proxy also (or only) runs the SOCKS5 and HTTP proxy (ProxyURL, HTTPProxyURL).
	Proxy bool
	// Scenario is a shipped scenario's name or a scenario file's path, played from the start.
	Scenario string
	// Args are more linkcond run options, as they would be written on its command line.
	Args []string
	// Binary is the linkcond to run (default: $LINKCOND_BINARY, else linkcond on PATH).
	Binary string
	// Env is the environment linkcond runs in (default: this process's); the control token is added to it.
	Env []string
	// StartTimeout bounds the wait for the ready lines (default 30 s); ctx bounds it too.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL (default 10 s).
	StopTimeout time.Duration
	// RequestTimeout bounds each control request (default 30 s); ctx bounds it too.
	RequestTimeout time.Duration
}

// Linkcond is one running linkcond run process.
//
// Its control endpoint listens on a free loopback port with a token of its own, never on the per-user socket, so
// a test's instance is never the one a "linkcond use" in a terminal steers by default.
type Linkcond struct {
	// Command is the command line linkcond was started with.
	Command []string
	// Ready are the words of each "ready" line linkcond printed, in order.
	Ready [][]string

	token       string
	addresses   []string
	proxy       string
	control     *control
	cmd         *exec.Cmd
	stderr      *tail
	exited      chan struct{}
	stopTimeout time.Duration

	mu         sync.Mutex
	exitStatus int
	killed     bool
	stopped    bool
}

// Start runs linkcond run and returns once it has printed its "ready control" line. A linkcond that exits first,
// or prints no such line within StartTimeout, gives a *StartError carrying its stderr and exit status.
func Start(ctx context.Context, options Options) (*Linkcond, error) {
	if len(options.Upstreams) == 0 && !options.Proxy {
		return nil, errors.New("linkcond.Start needs Upstreams, Proxy: true, or both")
	}
	binary, err := findBinary(options.Binary, options.Env)
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	profile := options.Profile
	if profile == "" {
		profile = "none"
	}
	args := []string{"run", "--profile", profile, "--control", "127.0.0.1:0"}
	for _, upstream := range options.Upstreams {
		args = append(args, "--listen", "127.0.0.1:0", "--upstream", upstream)
	}
	if options.Proxy {
		args = append(args, "--proxy", "127.0.0.1:0")
	}
	if options.Scenario != "" {
		args = append(args, "--scenario", options.Scenario)
	}
	args = append(args, options.Args...)

	link := &Linkcond{
		Command:     append([]string{binary}, args...),
		token:       token,
		exited:      make(chan struct{}),
		stopTimeout: orDefault(options.StopTimeout, 10*time.Second),
	}
	stdoutRead, stdoutWrite, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("linkcond: a pipe for its stdout: %w", err)
	}
	stderrRead, stderrWrite, err := os.Pipe()
	if err != nil {
		stdoutRead.Close()
		stdoutWrite.Close()
		return nil, fmt.Errorf("linkcond: a pipe for its stderr: %w", err)
	}
	link.cmd = exec.Command(binary, args...)
	link.cmd.Env = childEnv(options.Env, token)
	link.cmd.Stdout = stdoutWrite
	link.cmd.Stderr = stderrWrite
	err = link.cmd.Start()
	stdoutWrite.Close()
	stderrWrite.Close()
	if err != nil {
		stdoutRead.Close()
		stderrRead.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	link.stderr = newTail(stderrRead)
	go func() {
		state, _ := link.cmd.Process.Wait()
		link.mu.Lock()
		link.exitStatus = state.ExitCode()
		link.mu.Unlock()
		close(link.exited)
	}()

	controlURL, err := link.readReadyLines(ctx, stdoutRead, orDefault(options.StartTimeout, 30*time.Second),
		len(options.Upstreams), options.Proxy)
	if err != nil {
		return nil, err
	}
	link.control, err = newControl(controlURL, token, orDefault(options.RequestTimeout, 30*time.Second), link.requestFailed)
	if err != nil {
		link.kill()
		return nil, err
	}
	return link, nil
}

func orDefault(value, fallback time.Duration) time.Duration {
	if value <= 0 {
		return fallback
	}
	return value
}

// readReadyLines reads stdout until the "ready control" line and returns its URL; stdout is drained to its end
// afterwards, though linkcond writes nothing more there.
func (l *Linkcond) readReadyLines(ctx context.Context, stdout io.ReadCloser, timeout time.Duration, tcp int, proxy bool) (string, error) {
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer stdout.Close()
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			select {
			case lines <- scanner.Text():
			case <-done:
				io.Copy(io.Discard, stdout)
				return
			}
		}
		close(lines)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				status := l.waitForExit(5 * time.Second)
				return "", &StartError{Reason: fmt.Sprintf("%s exited with status %d before it was ready", l.described(), status),
					ExitStatus: status, Stderr: l.stderrAfterExit()}
			}
			words := strings.Fields(line)
			if len(words) < 3 || words[0] != "ready" {
				continue
			}
			l.Ready = append(l.Ready, words)
			switch words[1] {
			case "tcp":
				l.addresses = append(l.addresses, words[2])
			case "proxy":
				l.proxy = words[2]
			case "control":
				if len(l.addresses) < tcp || (proxy && l.proxy == "") {
					l.kill()
					return "", &StartError{Reason: fmt.Sprintf("%s said ready without every listener: %v", l.described(), l.Ready),
						ExitStatus: -1, Stderr: l.stderrAfterExit()}
				}
				return words[2], nil
			}
		case <-timer.C:
			l.kill()
			return "", &StartError{Reason: fmt.Sprintf("%s printed no \"ready control\" line within %v and was stopped", l.described(), timeout),
				ExitStatus: -1, Stderr: l.stderrAfterExit()}
		case <-ctx.Done():
			l.kill()
			return "", &StartError{Reason: fmt.Sprintf("%s was stopped before it was ready: %v", l.described(), ctx.Err()),
				ExitStatus: -1, Stderr: l.stderrAfterExit()}
		}
	}
}

func (l *Linkcond) described() string {
	return "linkcond run (" + strings.Join(l.Command[1:], " ") + ")"
}

// waitForExit waits up to timeout for the process to exit and returns its exit status, or -1.
func (l *Linkcond) waitForExit(timeout time.Duration) int {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-l.exited:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.exitStatus
	case <-timer.C:
		return -1
	}
}

func (l *Linkcond) stderrAfterExit() string {
	select {
	case <-l.exited:
		l.stderr.wait(5 * time.Second)
	default:
	}
	return l.stderr.String()
}

func (l *Linkcond) kill() {
	select {
	case <-l.exited:
	default:
		l.mu.Lock()
		l.killed = true
		l.mu.Unlock()
		l.cmd.Process.Kill()
		<-l.exited
	}
}

// Stop sends SIGTERM and waits up to StopTimeout (or until ctx is done), then sends SIGKILL. It returns an error
// when linkcond had exited with a status other than 0 before Stop, or had to be killed; calling it again returns
// the same answer.
func (l *Linkcond) Stop(ctx context.Context) error {
	l.mu.Lock()
	alreadyStopped := l.stopped
	l.stopped = true
	l.mu.Unlock()
	select {
	case <-l.exited:
	default:
		if !alreadyStopped {
			l.cmd.Process.Signal(syscall.SIGTERM)
		}
		timer := time.NewTimer(l.stopTimeout)
		defer timer.Stop()
		select {
		case <-l.exited:
		case <-timer.C:
			l.kill()
		case <-ctx.Done():
			l.kill()
		}
	}
	l.stderr.wait(5 * time.Second)
	l.mu.Lock()
	status, killed := l.exitStatus, l.killed
	l.mu.Unlock()
	if killed {
		return fmt.Errorf("linkcond did not exit after SIGTERM and was killed; its stderr:\n%s", strings.TrimRight(l.stderr.String(), "\n"))
	}
	if status != 0 {
		return fmt.Errorf("linkcond exited with status %d; its stderr:\n%s", status, strings.TrimRight(l.stderr.String(), "\n"))
	}
	return nil
}

// Exited is closed once linkcond has exited.
func (l *Linkcond) Exited() <-chan struct{} { return l.exited }

// ExitStatus is linkcond's exit status once it has exited (-1 when a signal ended it), and whether it has.
func (l *Linkcond) ExitStatus() (int, bool) {
	select {
	case <-l.exited:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.exitStatus, true
	default:
		return 0, false
	}
}

// Pid is linkcond's process id.
func (l *Linkcond) Pid() int { return l.cmd.Process.Pid }

// Stderr is what linkcond has written to stderr so far (its last 256 KiB).
func (l *Linkcond) Stderr() string { return l.stderr.String() }

// Addresses are HOST:PORT of each listener, one per upstream, in the order given.
func (l *Linkcond) Addresses() []string { return append([]string{}, l.addresses...) }

// ProxyURL is the SOCKS5 proxy with names resolved by linkcond, socks5h://HOST:PORT (for ALL_PROXY); "" without
// Proxy.
func (l *Linkcond) ProxyURL() string {
	if l.proxy == "" {
		return ""
	}
	return "socks5h://" + l.proxy
}

// HTTPProxyURL is the same proxy spoken as HTTP, http://HOST:PORT (for http_proxy and https_proxy); "" without
// Proxy.
func (l *Linkcond) HTTPProxyURL() string {
	if l.proxy == "" {
		return ""
	}
	return "http://" + l.proxy
}

// ControlURL is the control endpoint, http://127.0.0.1:PORT; requests need "Authorization: Bearer " + Token().
func (l *Linkcond) ControlURL() string { return l.control.url }

// Token is the control endpoint's token, chosen by this client.
func (l *Linkcond) Token() string { return l.token }

// requestFailed explains a control request that reached no endpoint.
func (l *Linkcond) requestFailed(method, path string, err error) error {
	select {
	case <-l.exited:
		l.mu.Lock()
		status, stopped := l.exitStatus, l.stopped
		l.mu.Unlock()
		if stopped {
			return fmt.Errorf("%s %s: this linkcond was stopped (exit status %d)", method, path, status)
		}
		l.stderr.wait(5 * time.Second)
		return fmt.Errorf("%s %s: linkcond has exited with status %d; its stderr:\n%s", method, path, status,
			strings.TrimRight(l.stderr.String(), "\n"))
	default:
		return fmt.Errorf("%s %s: could not reach linkcond's control endpoint %s: %w", method, path, l.control.url, err)
	}
}

// stderrLimit is the most of linkcond's stderr kept in memory, its last bytes.
const stderrLimit = 256 * 1024

// tail drains a pipe on a goroutine of its own, so linkcond never blocks on a full stderr, keeping the last bytes.
type tail struct {
	mu   sync.Mutex
	data []byte
	done chan struct{}
}

func newTail(pipe io.ReadCloser) *tail {
	t := &tail{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer pipe.Close()
		buffer := make([]byte, 65536)
		for {
			n, err := pipe.Read(buffer)
			t.mu.Lock()
			t.data = append(t.data, buffer[:n]...)
			if len(t.data) > stderrLimit {
				t.data = append([]byte{}, t.data[len(t.data)-stderrLimit:]...)
			}
			t.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return t
}

func (t *tail) wait(timeout time.Duration) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.data)
}
