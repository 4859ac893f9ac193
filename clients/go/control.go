package linkcond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode"
)

// control sends requests to a running linkcond's control endpoint: one HTTP request per call.
type control struct {
	url     string
	token   string
	client  *http.Client
	timeout time.Duration
	failed  func(method, path string, err error) error
}

func newControl(rawURL, token string, timeout time.Duration, failed func(method, path string, err error) error) (*control, error) {
	parsed, err := url.Parse(rawURL)
	if err != nil || parsed.Scheme != "http" || parsed.Port() == "" {
		return nil, fmt.Errorf("unexpected control URL %q: expected http://HOST:PORT", rawURL)
	}
	// A transport of its own, with no proxy: http_proxy in the environment must not carry control requests.
	transport := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	return &control{url: rawURL, token: token, client: &http.Client{Transport: transport}, timeout: timeout, failed: failed}, nil
}

// do sends one request and returns the answer's body; any status but 200 is an *APIError with the endpoint's
// message.
func (c *control) do(ctx context.Context, method, path, body string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, method, c.url+path, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	request.Header.Set("Authorization", "Bearer "+c.token)
	request.Header.Set("Content-Type", "text/x-linkcond")
	response, err := c.client.Do(request)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s %s: %w", method, path, err)
		}
		return "", c.failed(method, path, err)
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(response.Body, 64<<20))
	if err != nil {
		return "", fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if response.StatusCode != http.StatusOK {
		return "", &APIError{Method: method, Path: path, StatusCode: response.StatusCode, Message: strings.TrimSpace(string(answer))}
	}
	return string(answer), nil
}

func (c *control) json(ctx context.Context, path string, into any) error {
	answer, err := c.do(ctx, "GET", path, "")
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(answer), into); err != nil {
		return fmt.Errorf("GET %s: expected JSON: %w", path, err)
	}
	return nil
}

// Use switches to a built-in profile (by name) or to profile text ("key = value" lines), and stops a scenario.
// It returns the profile as linkcond resolved it.
func (l *Linkcond) Use(ctx context.Context, profile string) (string, error) {
	return l.control.do(ctx, "PUT", "/profile", profile)
}

// Set changes one setting, as "linkcond set KEY VALUE" does: Set(ctx, "downlink.delay", "300 ms").
func (l *Linkcond) Set(ctx context.Context, key, value string) error {
	return l.SetAll(ctx, map[string]string{key: value})
}

// SetAll changes several settings, all or none.
func (l *Linkcond) SetAll(ctx context.Context, settings map[string]string) error {
	if len(settings) == 0 {
		return errors.New("SetAll needs at least one setting")
	}
	keys := make([]string, 0, len(settings))
	for key := range settings {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var body strings.Builder
	for _, key := range keys {
		if strings.ContainsAny(key, "\r\n") || strings.ContainsAny(settings[key], "\r\n") {
			return fmt.Errorf("setting %q: a key or value cannot span lines", key)
		}
		fmt.Fprintf(&body, "%s = %s\n", key, settings[key])
	}
	_, err := l.control.do(ctx, "POST", "/settings", body.String())
	return err
}

// OfflineMode is what airplane mode does to new connections.
type OfflineMode string

const (
	// Refuse resets new connections, as an app in airplane mode sees (the default).
	Refuse OfflineMode = "refuse"
	// Blackhole lets new connections hang, as in a tunnel with no signal.
	Blackhole OfflineMode = "blackhole"
)

// Offline turns airplane mode on; existing connections stall with their data kept. mode "" means Refuse.
func (l *Linkcond) Offline(ctx context.Context, mode OfflineMode) error {
	_, err := l.control.do(ctx, "POST", "/offline", string(mode))
	return err
}

// Online ends airplane mode; stalled connections resume where they were.
func (l *Linkcond) Online(ctx context.Context) error {
	_, err := l.control.do(ctx, "POST", "/online", "")
	return err
}

// Reset resets every live connection.
func (l *Linkcond) Reset(ctx context.Context) error {
	_, err := l.control.do(ctx, "POST", "/reset", "")
	return err
}

// Scenario plays a shipped scenario (by name) or scenario text ("TIME ACTION" lines naming built-in profiles).
func (l *Linkcond) Scenario(ctx context.Context, nameOrText string) error {
	name := strings.TrimSpace(nameOrText)
	if name == "" || strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		_, err := l.control.do(ctx, "PUT", "/scenario", nameOrText)
		return err
	}
	// The endpoint takes scenario text only: a shipped scenario's text comes from the catalog.
	var catalog struct {
		Scenarios []struct {
			Name string `json:"name"`
			Text string `json:"text"`
		} `json:"scenarios"`
	}
	if err := l.control.json(ctx, "/catalog", &catalog); err != nil {
		return err
	}
	names := []string{}
	for _, scenario := range catalog.Scenarios {
		if scenario.Name == name {
			_, err := l.control.do(ctx, "PUT", "/scenario?name="+url.QueryEscape(name), scenario.Text)
			return err
		}
		names = append(names, scenario.Name)
	}
	return fmt.Errorf("no shipped scenario %q; shipped: %s; or pass scenario text (\"TIME ACTION\" lines)", name,
		strings.Join(names, ", "))
}

// StopScenario stops the scenario that is playing, if any.
func (l *Linkcond) StopScenario(ctx context.Context) error {
	_, err := l.control.do(ctx, "DELETE", "/scenario", "")
	return err
}

// Status is GET /status: version, profile, offline state, scenario, and per listener its counters.
func (l *Linkcond) Status(ctx context.Context) (*Status, error) {
	answer, err := l.control.do(ctx, "GET", "/status", "")
	if err != nil {
		return nil, err
	}
	status := &Status{}
	if err := json.Unmarshal([]byte(answer), status); err != nil {
		return nil, fmt.Errorf("GET /status: expected JSON: %w", err)
	}
	if err := json.Unmarshal([]byte(answer), &status.Raw); err != nil {
		return nil, fmt.Errorf("GET /status: expected a JSON object: %w", err)
	}
	return status, nil
}

// Profile is the current profile, fully resolved, in the profile file format.
func (l *Linkcond) Profile(ctx context.Context) (string, error) {
	return l.control.do(ctx, "GET", "/profile", "")
}

// Do sends any other control request, for instance Do(ctx, "GET", "/metrics", "").
func (l *Linkcond) Do(ctx context.Context, method, path, body string) (string, error) {
	return l.control.do(ctx, method, path, body)
}
