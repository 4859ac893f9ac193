package linkcond

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// findBinary returns the linkcond to run: binary if given, else $LINKCOND_BINARY, else linkcond on PATH.
func findBinary(binary string, env []string) (string, error) {
	from := ""
	if binary == "" {
		binary = lookupEnv(env, "LINKCOND_BINARY")
		from = " (from LINKCOND_BINARY)"
	}
	if binary != "" {
		info, err := os.Stat(binary)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("linkcond binary %q is not an executable file%s", binary, from)
		}
		return binary, nil
	}
	found, err := exec.LookPath("linkcond")
	if err != nil {
		return "", fmt.Errorf("linkcond is not on PATH; install it, or set LINKCOND_BINARY to the binary's path")
	}
	return found, nil
}

func lookupEnv(env []string, name string) string {
	if env == nil {
		return os.Getenv(name)
	}
	for i := len(env) - 1; i >= 0; i-- {
		if strings.HasPrefix(env[i], name+"=") {
			return strings.TrimPrefix(env[i], name+"=")
		}
	}
	return ""
}

// newToken returns a random control token (256 bits), handed to linkcond in LINKCOND_CONTROL_TOKEN.
func newToken() (string, error) {
	bytes := make([]byte, 32)
	if _, err := rand.Read(bytes); err != nil {
		return "", fmt.Errorf("choosing a control token: %w", err)
	}
	return hex.EncodeToString(bytes), nil
}

// childEnv is env (default: this process's environment) with the control token set.
func childEnv(env []string, token string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append(append([]string{}, env...), "LINKCOND_CONTROL_TOKEN="+token)
}
