// Package nsexec runs each fake sandbox as real Linux processes: the
// sandbox's first process is this program re-run in new mount, pid, uts,
// ipc and network namespaces, over an overlay of a root filesystem with a
// writable layer of its own, and it serves the fake envd
// ([fakeenvd.NewOS]) with real files and real processes. The host keeps a
// thin proxy whose Close kills the sandbox and removes its layer.
//
// It is for trusted code only. Processes run as root or as uid 1000 of the
// host with a reduced capability bounding set, a minimal /dev, the host's
// /root, /home and /tmp masked and only a loopback network, but they share
// the host's kernel and users: this is not a security boundary.
//
// Linux only, and it needs root (CAP_SYS_ADMIN) and overlayfs; elsewhere
// [Start] and [Probe] return errors.ErrUnsupported. A program that uses it
// must call [Main] first thing in main (and in TestMain for tests), so
// that the re-run program becomes the sandbox rather than starting over.
package nsexec

// Options configure the sandboxes.
type Options struct {
	// RootFS is the read-only lower layer every sandbox starts from;
	// default "/". A directory made by debootstrap is cleaner than the
	// host's own root.
	RootFS string
	// WorkDir holds each sandbox's writable layer; default os.TempDir().
	WorkDir string
}
