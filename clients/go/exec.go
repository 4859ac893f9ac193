package linkcond

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ExecOptions are the optional parts of Exec.
type ExecOptions struct {
	// Forward are ports whose 127.0.0.1:PORT inside reaches 127.0.0.1:PORT on the host, through the link.
	Forward []int
	// Mode is "auto" (default), "tun" or "proxy".
	Mode string
	// Scenario is a shipped scenario's name or a scenario file's path.
	Scenario string
	// Args are more linkcond exec options.
	Args []string
	// Stdin is the program's standard input (default: none).
	Stdin io.Reader
	// Binary is the linkcond to run (default: $LINKCOND_BINARY, else linkcond on PATH).
	Binary string
	// Env is the environment (default: this process's); the control token is added to it.
	Env []string
}

// ExecResult is how the program ended.
type ExecResult struct {
	// Status is the program's exit status (128+N when signal N ended it, 127 not found, 126 cannot run; 1 or 2
	// when linkcond itself could not start it, as Stderr says).
	Status int
	Stdout []byte
	// Stderr is the program's stderr, which also carries linkcond's own lines ("ready control URL", notices).
	Stderr []byte
}

// Exec runs argv under "linkcond exec --profile PROFILE" and waits for it. When ctx is done first, linkcond is
// sent SIGTERM, then SIGKILL 10 s later, and the error says so with its stderr.
func Exec(ctx context.Context, profile string, argv []string, options ...ExecOptions) (ExecResult, error) {
	var option ExecOptions
	if len(options) > 0 {
		option = options[0]
	}
	if len(argv) == 0 {
		return ExecResult{}, errors.New("linkcond.Exec needs a program to run")
	}
	binary, err := findBinary(option.Binary, option.Env)
	if err != nil {
		return ExecResult{}, err
	}
	token, err := newToken()
	if err != nil {
		return ExecResult{}, err
	}
	args := []string{"exec", "--profile", profile}
	if len(option.Forward) > 0 {
		ports := make([]string, len(option.Forward))
		for i, port := range option.Forward {
			ports[i] = strconv.Itoa(port)
		}
		args = append(args, "--forward", strings.Join(ports, ","))
	}
	if option.Mode != "" {
		args = append(args, "--mode", option.Mode)
	}
	if option.Scenario != "" {
		args = append(args, "--scenario", option.Scenario)
	}
	args = append(append(append(args, option.Args...), "--"), argv...)
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(option.Env, token)
	cmd.Stdin = option.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("starting %s: %w", binary, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case <-waited:
		case <-timer.C:
			cmd.Process.Kill()
			<-waited
		}
		return ExecResult{}, fmt.Errorf("linkcond exec %s was stopped: %w; its stderr:\n%s", strings.Join(argv, " "),
			ctx.Err(), strings.TrimRight(stderr.String(), "\n"))
	}
	result := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		result.Status = 0
	case errors.As(err, &exitErr):
		if waitStatus, ok := exitErr.Sys().(syscall.WaitStatus); ok && waitStatus.Signaled() {
			result.Status = 128 + int(waitStatus.Signal())
		} else {
			result.Status = exitErr.ExitCode()
		}
	default:
		return result, fmt.Errorf("linkcond exec: %w", err)
	}
	return result, nil
}
