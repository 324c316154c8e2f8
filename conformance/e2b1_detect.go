package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// The kit cannot ask a server which e2b SDK it runs, but it can read what
// the server command would load from disk: Node resolves "e2b" from the
// script's folder up through node_modules (the code interpreter's own
// nested copy first), and a Python virtual environment keeps each
// distribution's version in its site-packages as e2b-<version>.dist-info.
// e2b 1.x reads no E2B_API_URL, so the banner says so before any spec runs,
// with where it found the version: a run that never reaches the fake then
// reads as what it is. It never changes the path the kit takes: that stays
// the user's choice (--e2b1).

// foundSDK is an e2b SDK the server command would load.
type foundSDK struct {
	version string // "1.13.2"
	where   string // the file or folder that says so
}

// major1 reports whether the SDK is e2b 1.x.
func (f foundSDK) major1() bool { return strings.HasPrefix(f.version, "1.") }

// nodeSDKFiles are the package.json files, under a node_modules folder, of
// the e2b a Node server loads: @e2b/code-interpreter's nested copy (npm
// nests it when the top-level e2b is another major), then the top-level
// one.
var nodeSDKFiles = []string{
	filepath.Join("@e2b", "code-interpreter", "node_modules", "e2b", "package.json"),
	filepath.Join("e2b", "package.json"),
}

// findE2BSDK looks for the e2b SDK the command would load, from cwd and
// from the folders of the command's arguments that name existing paths.
func findE2BSDK(command []string, cwd string) (foundSDK, bool) {
	dirs := []string{cwd}
	for _, arg := range command {
		path := arg
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		st, err := os.Stat(path)
		switch {
		case err != nil:
		case st.IsDir():
			dirs = append(dirs, path)
		default:
			dirs = append(dirs, filepath.Dir(path))
		}
	}
	for _, dir := range dirs {
		if f, ok := findPythonSDK(dir); ok {
			return f, true
		}
		if f, ok := findNodeSDK(dir); ok {
			return f, true
		}
	}
	return foundSDK{}, false
}

// findNodeSDK walks from dir up to the root, as Node's resolution does.
func findNodeSDK(dir string) (foundSDK, bool) {
	for {
		for _, rel := range nodeSDKFiles {
			path := filepath.Join(dir, "node_modules", rel)
			data, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			var pkg struct {
				Name, Version string
			}
			if json.Unmarshal(data, &pkg) == nil && pkg.Name == "e2b" && pkg.Version != "" {
				return foundSDK{version: pkg.Version, where: path}, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return foundSDK{}, false
		}
		dir = parent
	}
}

// findPythonSDK looks in the virtual environment dir is the bin folder of,
// or that dir holds as .venv or venv.
func findPythonSDK(dir string) (foundSDK, bool) {
	envs := []string{filepath.Join(dir, ".venv"), filepath.Join(dir, "venv")}
	if filepath.Base(dir) == "bin" {
		envs = append([]string{filepath.Dir(dir)}, envs...)
	}
	for _, env := range envs {
		matches, _ := filepath.Glob(filepath.Join(env, "lib", "python3*", "site-packages", "e2b-*.dist-info"))
		for _, m := range matches {
			if v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "e2b-"), ".dist-info"); v != "" {
				return foundSDK{version: v, where: m}, true
			}
		}
	}
	return foundSDK{}, false
}

// e2b1SDKLine is the banner's line about an e2b 1.x SDK the server command
// would load, or "": with no --e2b1 path it says the fake is out of the
// SDK's reach and how to reach it.
func (r *runState) e2b1SDKLine() string {
	if len(r.cfg.ServerCommand) == 0 {
		return ""
	}
	cwd, err := os.Getwd()
	if err != nil {
		return ""
	}
	f, ok := findE2BSDK(r.cfg.ServerCommand, cwd)
	if !ok || !f.major1() {
		return ""
	}
	if r.cfg.E2B1 != fakeprovider.E2B1None {
		return "  e2b SDK: e2b " + f.version + " (" + f.where + ")\n"
	}
	return "  e2b SDK: e2b " + f.version + " (" + f.where + ") reads no E2B_API_URL, so it cannot reach the fake as started: " +
		"run again with --e2b1 debug, or --e2b1 preload for a Node server\n"
}
