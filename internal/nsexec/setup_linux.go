//go:build linux

package nsexec

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Sandbox accounts, as in fakeenvd: root and user (uid and gid 1000).
const (
	userName = "user"
	userID   = 1000
	userHome = "/home/user"
)

// setupRoot builds the sandbox's root at c.Dir/merged and moves into it:
// the overlay, /proc, a minimal /dev, fresh /tmp, /root and /home, the
// accounts, /run/e2b, a boot_id of its own, the hostname and lo.
func setupRoot(c initConfig) error {
	upper, work, merged := filepath.Join(c.Dir, "upper"), filepath.Join(c.Dir, "work"), filepath.Join(c.Dir, "merged")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("sandbox layer: %w", err)
		}
	}
	// Nothing mounted here may reach the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", c.RootFS, upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mounting the overlay of %s (is overlayfs available?): %w", c.RootFS, err)
	}
	steps := []func(string) error{mountSpecial, mountDev, writeAccounts}
	for _, step := range steps {
		if err := step(merged); err != nil {
			return err
		}
	}
	if err := writeIdentity(merged, c); err != nil {
		return err
	}
	if err := pivot(merged); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(fakeenvd.Hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	return loopbackUp()
}

// mount is one mount of the sandbox's root.
type mount struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

// mountSpecial mounts /proc and tmpfs over /tmp, /root and /home (the
// host's are masked), then makes /home/user.
func mountSpecial(root string) error {
	const nosuid = unix.MS_NOSUID | unix.MS_NODEV
	mounts := []mount{
		{"proc", "proc", "proc", nosuid | unix.MS_NOEXEC, ""},
		{"tmpfs", "tmp", "tmpfs", nosuid, "mode=1777"},
		{"tmpfs", "root", "tmpfs", nosuid, "mode=0700"},
		{"tmpfs", "home", "tmpfs", nosuid, "mode=0755"},
		{"tmpfs", "run", "tmpfs", nosuid, "mode=0755"},
	}
	if err := doMounts(root, mounts); err != nil {
		return err
	}
	home := filepath.Join(root, userHome)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("home: %w", err)
	}
	return os.Chown(home, userID, userID)
}

func doMounts(root string, mounts []mount) error {
	for _, m := range mounts {
		target := filepath.Join(root, m.target)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", m.target, err)
		}
		if err := unix.Mount(m.source, target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mounting %s on /%s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// devices are the host devices bound into the sandbox's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mountDev gives the sandbox a /dev of its own: a tmpfs with a few device
// nodes bound from the host, a new devpts instance and /dev/shm.
func mountDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := doMounts(root, []mount{{"tmpfs", "dev", "tmpfs", unix.MS_NOSUID, "mode=0755"}}); err != nil {
		return err
	}
	for _, name := range devices {
		target := filepath.Join(dev, name)
		if err := os.WriteFile(target, nil, 0o666); err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
		if err := unix.Mount("/dev/"+name, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", name, err)
		}
	}
	err := doMounts(root, []mount{
		{"devpts", "dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"},
		{"tmpfs", "dev/shm", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
	})
	if err != nil {
		return err
	}
	links := map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	return nil
}

// writeAccounts makes uid 1000 the sandbox's "user" in /etc/passwd and
// /etc/group (an entry of the lower layer with that name or id gives way).
func writeAccounts(root string) error {
	files := map[string]string{
		"etc/passwd": fmt.Sprintf("%s:x:%d:%d::%s:/bin/bash", userName, userID, userID, userHome),
		"etc/group":  fmt.Sprintf("%s:x:%d:", userName, userID),
	}
	for name, entry := range files {
		p := filepath.Join(root, name)
		var kept []string
		if f, err := os.Open(p); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Split(sc.Text(), ":")
				if len(fields) > 2 && (fields[0] == userName || fields[2] == fmt.Sprint(userID)) {
					continue
				}
				kept = append(kept, sc.Text())
			}
			f.Close()
		}
		kept = append(kept, entry)
		if err := os.WriteFile(p, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// writeIdentity writes /etc/hostname, envd's /run/e2b files and binds a
// boot_id of the sandbox's own over the kernel's.
func writeIdentity(root string, c initConfig) error {
	run := filepath.Join(root, "run/e2b")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return fmt.Errorf("/run/e2b: %w", err)
	}
	files := map[string]struct {
		data string
		perm os.FileMode
	}{
		"etc/hostname":             {fakeenvd.Hostname + "\n", 0o644},
		"run/e2b/.E2B_SANDBOX":     {"true", 0o444},
		"run/e2b/.E2B_SANDBOX_ID":  {c.Envd.SandboxID, 0o666},
		"run/e2b/.E2B_TEMPLATE_ID": {c.Envd.TemplateID, 0o666},
	}
	for name, f := range files {
		if f.data == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(f.data), f.perm); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	bootID := filepath.Join(c.Dir, "boot_id")
	if err := os.WriteFile(bootID, []byte(newUUID()+"\n"), 0o444); err != nil {
		return fmt.Errorf("boot_id: %w", err)
	}
	target := filepath.Join(root, "proc/sys/kernel/random/boot_id")
	if err := unix.Mount(bootID, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding boot_id: %w", err)
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// pivot makes root the sandbox's / and detaches the host's.
func pivot(root string) error {
	old := filepath.Join(root, ".oldroot")
	if err := os.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host root: %w", err)
	}
	return os.Remove("/.oldroot")
}

// loopbackUp brings up lo, the sandbox's only network interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}
