package enginetest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sweep removes what runs of this package left behind when they were
// killed before they could clean up: processes, mounts, network namespaces,
// links, iptables rules and directories of every owner that is no longer
// running. What a live run owns is left alone.
func Sweep() error {
	owners := map[int]bool{}
	addOwner := func(pid int) {
		if pid > 0 && pid != os.Getpid() && !Alive(pid) {
			owners[pid] = true
		}
	}
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		if s, ok := strings.CutPrefix(e.Name(), dirPrefix); ok {
			if pid, err := strconv.Atoi(s); err == nil {
				addOwner(pid)
			}
		}
	}
	names, err := netNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		addOwner(linkOwner(name))
	}
	rules, err := forwardRules()
	if err != nil {
		return err
	}
	for _, r := range rules {
		addOwner(r.owner)
	}
	for pid := range owners {
		removeOwned(pid)
	}
	return nil
}

// Alive says whether pid runs (a zombie does not).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return (err == nil || errors.Is(err, syscall.EPERM)) && !zombie(pid)
}

// linkOwner returns the owner pid in a link or namespace name
// cce-<pid36>-..., or 0.
func linkOwner(name string) int {
	s, ok := strings.CutPrefix(name, linkPrefix)
	if !ok {
		return 0
	}
	id, _, ok := strings.Cut(s, "-")
	if !ok {
		return 0
	}
	pid, err := strconv.ParseInt(id, 36, 32)
	if err != nil {
		return 0
	}
	return int(pid)
}

// netNames lists the links and network namespaces with the lab prefix.
func netNames() ([]string, error) {
	var out []string
	out = append(out, netnsNames()...)
	links, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, linkPrefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

func netnsNames() []string {
	var out []string
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), linkPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

type forwardRule struct {
	spec  []string // the rule as iptables -S prints it, without "-A"
	owner int
}

var commentRE = regexp.MustCompile(`--comment "?` + dirPrefix + `([0-9]+)"?`)

// forwardRules lists the lab rules of the FORWARD chain.
func forwardRules() ([]forwardRule, error) {
	out, err := exec.Command("iptables", "-S", "FORWARD").Output()
	if err != nil {
		return nil, fmt.Errorf("listing iptables rules: %w", err)
	}
	var rules []forwardRule
	for _, line := range strings.Split(string(out), "\n") {
		m := commentRE.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(line, "-A FORWARD ") {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		spec := strings.Fields(strings.TrimPrefix(line, "-A "))
		for i, f := range spec {
			spec[i] = strings.Trim(f, `"`)
		}
		rules = append(rules, forwardRule{spec: spec, owner: pid})
	}
	return rules, nil
}

// removeOwned removes everything owner's run made: it kills the processes
// that run from its directories (engines, containerd, shims, containers,
// scripts), unmounts what the engines mounted there, and deletes its
// namespaces, links, rules and directories. Errors are ignored: it is
// cleanup, and what it cannot remove now the next Sweep will.
func removeOwned(owner int) {
	dir := filepath.Join(os.TempDir(), dirPrefix+strconv.Itoa(owner))
	killTree(processesUsing(dir + "/"))
	if b, err := os.ReadFile(filepath.Join(dir, "moto.pid")); err == nil {
		// The run's moto_server, unless its pid has been reused since.
		if pid, err := strconv.Atoi(string(b)); err == nil && pid != os.Getpid() {
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Contains(cmdline, []byte("moto_server")) {
				killTree([]int{pid})
			}
		}
	}
	unmountUnder(dir)
	tag := linkPrefix + strconv.FormatInt(int64(owner), 36) + "-"
	for _, ns := range netnsNames() {
		if strings.HasPrefix(ns, tag) {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	}
	if names, err := netNames(); err == nil {
		for _, name := range names {
			if strings.HasPrefix(name, tag) {
				exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
	if rules, err := forwardRules(); err == nil {
		for _, r := range rules {
			if r.owner == owner {
				exec.Command("iptables", append([]string{"-D"}, r.spec...)...).Run()
			}
		}
	}
	os.RemoveAll(dir)
}

// processesUsing returns the processes whose command line mentions path
// (the engines and everything they start name their directories), never
// this process.
func processesUsing(path string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(path)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// children maps each process to its children.
func children() map[int][]int {
	out := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in parentheses may contain spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out
}

// killTree kills the processes and all their descendants with SIGKILL,
// descendants first, and waits up to 10 s for them to be gone.
func killTree(pids []int) {
	if len(pids) == 0 {
		return
	}
	kids := children()
	var all []int
	var walk func(int)
	walk = func(p int) {
		if slices.Contains(all, p) || p == os.Getpid() {
			return
		}
		for _, c := range kids[p] {
			walk(c)
		}
		all = append(all, p)
	}
	for _, p := range pids {
		walk(p)
	}
	for _, p := range all {
		syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range all {
		for Alive(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

// unmountUnder detaches every mount point below dir, deepest first (the
// engines bind-mount their data roots and network namespaces there).
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 {
			p := unescapeMount(fields[4])
			if p == dir || strings.HasPrefix(p, dir+"/") {
				points = append(points, p)
			}
		}
	}
	f.Close()
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		unix.Unmount(p, unix.MNT_DETACH)
	}
}

// unescapeMount undoes the octal escapes of /proc/self/mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkStatic makes sure busybox is the static build: it is the only file
// of the test services' image.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w (apt-get install busybox-static)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: apt-get install busybox-static", path)
		}
	}
	return nil
}
