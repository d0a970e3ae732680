// Package userconfig keeps what `clusterctl use` sets for one user: the
// default cluster and its region, in a small JSON file under the user's
// configuration directory (os.UserConfigDir: $XDG_CONFIG_HOME or
// ~/.config on Linux, ~/Library/Application Support on macOS).
package userconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvCluster names the environment variable that overrides the file's
// cluster: set, it is the default (empty: no default, the file ignored).
const EnvCluster = "CLUSTERCTL_CLUSTER"

// Config is the file's content.
type Config struct {
	// Cluster is the default cluster: the one a command acts on when no
	// -j (nor argument) names one.
	Cluster string `json:"cluster"`
	// Region is the cluster's region, used when neither --region nor
	// AWS_REGION/AWS_DEFAULT_REGION gives one; "" for none.
	Region string `json:"region,omitempty"`
}

// Path is the file's path for this user.
func Path() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locating the user configuration directory: %w", err)
	}
	return filepath.Join(dir, "clusterctl", "config.json"), nil
}

// Load reads the file at path; a missing file is the zero Config. A file
// that is not what Save writes is an error naming the file, so that a
// hand edit gone wrong is found rather than ignored.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("reading %s: %w (fix it, or remove it with clusterctl use --clear)", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("reading %s: text after the JSON object (fix it, or remove it with clusterctl use --clear)", path)
	}
	return c, nil
}

// Save writes c to path, creating its directory, readable by the user
// alone. It writes a temporary file and renames it, so that a command
// reading the file meanwhile sees the old one or the new one, whole.
func Save(path string, c Config) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the configuration: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Remove deletes the file at path; a missing file is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// Default is the default cluster a command would use, and where it came
// from.
type Default struct {
	Cluster string
	Region  string
	// FromEnv: the cluster is CLUSTERCTL_CLUSTER's, not the file's.
	FromEnv bool
	// Path is the file's path.
	Path string
}

// Resolve reads the default: CLUSTERCTL_CLUSTER when set (even empty,
// which means none), else the file's cluster. The file's region holds
// either way, as the default region. lookup is os.LookupEnv.
func Resolve(lookup func(string) (string, bool)) (Default, error) {
	path, err := Path()
	if err != nil {
		if v, ok := lookup(EnvCluster); ok {
			return Default{Cluster: v, FromEnv: true}, nil
		}
		return Default{}, err
	}
	c, err := Load(path)
	if err != nil {
		return Default{Path: path}, err
	}
	d := Default{Cluster: c.Cluster, Region: c.Region, Path: path}
	if v, ok := lookup(EnvCluster); ok {
		d.Cluster, d.FromEnv = v, true
	}
	return d, nil
}
