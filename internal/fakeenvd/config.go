package fakeenvd

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Defaults applied by [New] to zero [Config] fields.
const (
	DefaultDiskQuota int64 = 256 << 20
	DefaultHome            = "/home/user"
	DefaultUser            = "user"
)

// Hostname is what `hostname` and `uname -n` print inside the sandbox.
const Hostname = "e2b.local"

// Config describes the sandbox a [Daemon] serves.
type Config struct {
	// SandboxID is exported to processes as E2B_SANDBOX_ID and written to
	// /run/e2b/.E2B_SANDBOX_ID.
	SandboxID string
	// TemplateID is exported to processes as E2B_TEMPLATE_ID and written to
	// /run/e2b/.E2B_TEMPLATE_ID.
	TemplateID string
	// AccessToken, when not empty, is required as X-Access-Token on every
	// request except GET /health (/files also accept a URL signature).
	AccessToken string
	// EnvVars is the default environment of every process.
	EnvVars map[string]string
	// DiskQuota limits the bytes of file contents; default 256 MiB. Beyond
	// it uploads answer 507 and shell writes fail with ENOSPC.
	DiskQuota int64
	// Home is the default user's home and working directory; default /home/user.
	Home string
	// User is the default user's name (uid and gid 1000); default "user".
	User string
	// Builtins adds or replaces shell commands by name; a nil value removes
	// a default command (it then answers "command not found").
	Builtins map[string]Builtin
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.DiskQuota <= 0 {
		c.DiskQuota = DefaultDiskQuota
	}
	if c.Home == "" {
		c.Home = DefaultHome
	}
	c.Home = path.Clean("/" + c.Home)
	if c.User == "" {
		c.User = DefaultUser
	}
	return c
}

// account is a user of the sandbox.
type account struct {
	name     string
	uid, gid int
	home     string
}

// accounts lists the users: root and the default user.
func (c Config) accounts() []account {
	return []account{
		{name: "root", uid: 0, gid: 0, home: "/root"},
		{name: c.User, uid: 1000, gid: 1000, home: c.Home},
	}
}

// binDir holds a stub file for every built-in command.
const binDir = "/usr/bin"

// stubMagic starts the stub files in binDir; running such a file runs the
// built-in of the same name.
const stubMagic = "#!/sandboxkit/builtin\n"

// defaultPath is PATH for every process.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// populate lays out the base image: the usual directories, /dev devices,
// /etc files, home directories and one stub per built-in in /usr/bin.
func populate(m *MemFS, cfg Config, bins map[string]Builtin) error {
	type dir struct {
		p    string
		mode fs.FileMode
		uid  int
	}
	dirs := []dir{
		{"/usr/bin", 0o755, 0}, {"/usr/sbin", 0o755, 0}, {"/usr/lib", 0o755, 0},
		{"/usr/local/bin", 0o755, 0}, {"/etc", 0o755, 0}, {"/dev", 0o755, 0},
		{"/tmp", 0o777 | fs.ModeSticky, 0}, {"/var/tmp", 0o777 | fs.ModeSticky, 0},
		{"/var/log", 0o755, 0}, {"/opt", 0o755, 0}, {"/mnt", 0o755, 0},
		{"/root", 0o700, 0}, {"/home", 0o755, 0},
	}
	for _, d := range dirs {
		if err := m.MkdirAllAs(d.p, 0o755, d.uid, d.uid); err != nil {
			return fmt.Errorf("fakeenvd: populate %s: %w", d.p, err)
		}
		if err := m.Chmod(d.p, d.mode); err != nil {
			return fmt.Errorf("fakeenvd: populate %s: %w", d.p, err)
		}
	}
	for link, target := range map[string]string{"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib"} {
		if err := m.SymlinkAs(target, link, 0, 0); err != nil {
			return fmt.Errorf("fakeenvd: populate %s: %w", link, err)
		}
	}
	for name, kind := range map[string]devKind{"null": devNull, "zero": devZero, "random": devRandom, "urandom": devRandom} {
		if err := m.mknod("/dev/"+name, kind); err != nil {
			return fmt.Errorf("fakeenvd: populate /dev/%s: %w", name, err)
		}
	}
	var passwd, group strings.Builder
	for _, a := range cfg.accounts() {
		shell := "/bin/bash"
		fmt.Fprintf(&passwd, "%s:x:%d:%d:%s:%s:%s\n", a.name, a.uid, a.gid, a.name, a.home, shell)
		fmt.Fprintf(&group, "%s:x:%d:\n", a.name, a.gid)
		if err := m.MkdirAllAs(a.home, 0o755, a.uid, a.gid); err != nil {
			return fmt.Errorf("fakeenvd: populate %s: %w", a.home, err)
		}
		if err := m.Chown(a.home, a.uid, a.gid); err != nil {
			return fmt.Errorf("fakeenvd: populate %s: %w", a.home, err)
		}
	}
	if err := populateRunDir(m, cfg); err != nil {
		return err
	}
	if err := writeBootID(m); err != nil {
		return err
	}
	files := map[string]string{
		"/etc/hostname":   Hostname + "\n",
		"/etc/passwd":     passwd.String(),
		"/etc/group":      group.String(),
		"/etc/os-release": "PRETTY_NAME=\"sandboxkit fake sandbox\"\nNAME=\"sandboxkit\"\nID=sandboxkit\n",
	}
	for p, content := range files {
		if err := writeRootFile(m, p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(bins))
	for name := range bins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.Contains(name, "/") || name == "" {
			continue
		}
		if err := writeRootFile(m, path.Join(binDir, name), []byte(stubMagic), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// runDir is where envd leaves the sandbox's identity for programs that do
// not read the environment (infra packages/envd/internal/host/mmds.go,
// E2BRunDir).
const runDir = "/run/e2b"

// populateRunDir writes /run/e2b/.E2B_SANDBOX (mode 0444, envd's main.go)
// and, when known, .E2B_SANDBOX_ID and .E2B_TEMPLATE_ID (mode 0666, envd's
// host/mmds.go PollForMMDSOpts).
func populateRunDir(m *MemFS, cfg Config) error {
	if err := m.MkdirAllAs(runDir, 0o755, 0, 0); err != nil {
		return fmt.Errorf("fakeenvd: populate %s: %w", runDir, err)
	}
	if err := writeRootFile(m, path.Join(runDir, ".E2B_SANDBOX"), []byte("true"), 0o444); err != nil {
		return err
	}
	for name, value := range map[string]string{".E2B_SANDBOX_ID": cfg.SandboxID, ".E2B_TEMPLATE_ID": cfg.TemplateID} {
		if value == "" {
			continue
		}
		if err := writeRootFile(m, path.Join(runDir, name), []byte(value), 0o666); err != nil {
			return err
		}
	}
	return nil
}

// bootIDPath is the kernel's boot ID: a random UUID made at each boot,
// which programs (and E2B's own SDK tests) read to tell a resumed sandbox,
// whose memory and kernel were restored, from a rebooted one.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// writeBootID gives the sandbox a fresh boot ID (read-only, as procfs
// shows it: -r--r--r-- root).
func writeBootID(m *MemFS) error {
	if err := m.MkdirAllAs(path.Dir(bootIDPath), 0o555, 0, 0); err != nil {
		return fmt.Errorf("fakeenvd: populate %s: %w", bootIDPath, err)
	}
	return writeRootFile(m, bootIDPath, []byte(newUUID()+"\n"), 0o444)
}

// newUUID returns a random (version 4) UUID in its text form.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Errorf("fakeenvd: reading random bytes: %w", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// writeRootFile writes a root-owned file.
func writeRootFile(m *MemFS, p string, data []byte, perm fs.FileMode) error {
	if err := m.WriteFile(p, data, perm); err != nil {
		return fmt.Errorf("fakeenvd: populate %s: %w", p, err)
	}
	if err := m.Chmod(p, perm); err != nil {
		return fmt.Errorf("fakeenvd: populate %s: %w", p, err)
	}
	if err := m.Chown(p, 0, 0); err != nil {
		return fmt.Errorf("fakeenvd: populate %s: %w", p, err)
	}
	return nil
}
