package enginetest

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Image is the name under which every engine holds the test services'
// image: Debian's static busybox and nothing else. There is no registry
// here, so it is imported into each engine when the engine first starts,
// as an image baked into the machine image would be; create services with
// --no-resolve-image.
const Image = "clusterctl-test/busybox:latest"

// busyboxRootfs writes the image's root file system as a tar file: busybox
// as /bin/busybox and the applets the tests use as links to it.
func busyboxRootfs(dir, busybox string) (string, error) {
	body, err := os.ReadFile(busybox)
	if err != nil {
		return "", fmt.Errorf("reading busybox: %w", err)
	}
	path := filepath.Join(dir, "busybox-rootfs.tar")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := tar.NewWriter(f)
	now := time.Unix(0, 0)
	for _, d := range []string{"bin/", "tmp/", "etc/"} {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(body)), ModTime: now}); err != nil {
		return "", err
	}
	if _, err := w.Write(body); err != nil {
		return "", err
	}
	for _, applet := range []string{"sh", "sleep", "true", "cat", "echo", "ls", "hostname", "wget", "nc"} {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}
