package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// SessionAPI is what opening a shell needs from Systems Manager.
type SessionAPI interface {
	StartSession(ctx context.Context, in *ssm.StartSessionInput, opts ...func(*ssm.Options)) (*ssm.StartSessionOutput, error)
	TerminateSession(ctx context.Context, in *ssm.TerminateSessionInput, opts ...func(*ssm.Options)) (*ssm.TerminateSessionOutput, error)
}

// Plugin is the AWS CLI's Session Manager plugin, which speaks the
// session's protocol over its stream URL.
const Plugin = "session-manager-plugin"

// PluginInstall says how to install the plugin, in one line.
const PluginInstall = "the AWS Session Manager plugin (session-manager-plugin) is not on PATH: install it as https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-install-plugin.html says"

// ErrNoPlugin: the plugin is not installed.
var ErrNoPlugin = errors.New(PluginInstall)

// FindPlugin returns the plugin's path, or ErrNoPlugin.
func FindPlugin() (string, error) {
	p, err := exec.LookPath(Plugin)
	if err != nil {
		return "", ErrNoPlugin
	}
	return p, nil
}

// Shell is a session to open on an instance.
type Shell struct {
	Plugin   string // the plugin's path (FindPlugin)
	Instance string
	Region   string
	Profile  string // "" for the default
	Endpoint string // the SSM endpoint the session was started at
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
}

// PluginArgs are the plugin's arguments for a started session, as the
// AWS CLI passes them: the StartSession answer as JSON, the region, the
// operation, the profile, the request as JSON and the endpoint.
func PluginArgs(out *ssm.StartSessionOutput, region, profile, target, endpoint string) ([]string, error) {
	resp, err := json.Marshal(map[string]string{
		"SessionId": aws.ToString(out.SessionId), "TokenValue": aws.ToString(out.TokenValue), "StreamUrl": aws.ToString(out.StreamUrl),
	})
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]string{"Target": target})
	if err != nil {
		return nil, err
	}
	return []string{string(resp), region, "StartSession", profile, string(req), endpoint}, nil
}

// Open starts a session on the instance and hands the terminal to the
// plugin until the session ends; the plugin's exit status is the
// command's. Ctrl-C belongs to the session (the plugin passes it on).
func Open(ctx context.Context, api SessionAPI, s Shell) error {
	out, err := api.StartSession(ctx, &ssm.StartSessionInput{Target: aws.String(s.Instance)})
	if err != nil {
		return fmt.Errorf("starting a session on %s: %w", s.Instance, err)
	}
	args, err := PluginArgs(out, s.Region, s.Profile, s.Instance, s.Endpoint)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.Plugin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	// Not bound to ctx: Ctrl-C reaches the plugin with the terminal's
	// process group and the plugin passes it to the remote shell, while
	// clusterctl (which catches it) waits to report the session's status.
	if err := cmd.Start(); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		api.TerminateSession(cctx, &ssm.TerminateSessionInput{SessionId: out.SessionId})
		return fmt.Errorf("running %s: %w", Plugin, err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return &errs.StatusError{Code: ee.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", Plugin, err)
	}
	return nil
}
