package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// The Docker Engine a node runs is its stack's setting (ENGINE_VERSION,
// spec.Core.EngineVersion): setup installs exactly that version of the
// distribution's docker package before the engine first starts, so that
// nodes launched months apart run the same engine. A stack of before the
// setting names none, and the node gets the distribution's current one,
// as it always did. Installing here rather than in the loader: the
// managers' user data has no bytes left for the check.

// enginePackage is the package setup installs: docker-<version>, or
// docker for settings that name no version.
func enginePackage(s settings) (string, error) {
	v, ok := s["ENGINE_VERSION"]
	if !ok || v == "" {
		return "docker", nil
	}
	if err := s.need("ENGINE_VERSION"); err != nil {
		return "", err
	}
	return "docker-" + v, nil
}

// installEngine installs pkg with dnf, as the loader installs what it
// needs: a few attempts, a pause between them (a mirror may be busy).
func installEngine(ctx context.Context, pkg string, logf func(string, ...any)) error {
	const attempts = 5
	pause := seconds("CLUSTERCTL_INSTALL_PAUSE", 5*time.Second)
	var err error
	for i := range attempts {
		cmd := exec.CommandContext(ctx, "dnf", "install", "-y", pkg)
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err = cmd.Run(); err == nil {
			return nil
		}
		logf("installing %s (attempt %d of %d): %v", pkg, i+1, attempts, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	return fmt.Errorf("installing %s: %w", pkg, err)
}

// selfSHA256 is the SHA-256 of the running node agent: the uncompressed
// binary the loader checked against the hash its stack pins.
func selfSHA256() (string, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// runLabels are the engine labels that say what the node runs: its node
// agent's hash and the engine version its stack asked for (none for a
// stack of before the setting). What a node says of itself is shown, never
// trusted for a decision.
func runLabels(agentSHA string, s settings) []string {
	var out []string
	if agentSHA != "" {
		out = append(out, names.EngineLabelAgent+"="+agentSHA)
	}
	if v := s["ENGINE_VERSION"]; v != "" && !strings.ContainsAny(v, "\n\"") {
		out = append(out, names.EngineLabelEngineVersion+"="+v)
	}
	return out
}
