package fakeenvd

import (
	"strings"
	"testing"
)

// TestProcessEnvironmentAsEnvd checks the variables envd gives every
// process and the identity files it leaves in /run/e2b (infra
// packages/envd/main.go, internal/host/mmds.go, internal/api/init.go,
// internal/services/process/handler/handler.go).
func TestProcessEnvironmentAsEnvd(t *testing.T) {
	d := newDaemon(t, Config{SandboxID: "sbx123", TemplateID: "tmpl456", EnvVars: map[string]string{"FROM_CREATE": "yes"}})
	r := run(t, d, "env | sort; cat /run/e2b/.E2B_SANDBOX /run/e2b/.E2B_SANDBOX_ID /run/e2b/.E2B_TEMPLATE_ID")
	if r.code() != 0 {
		t.Fatalf("exit %d, stderr %q", r.code(), r.stderr)
	}
	for _, want := range []string{
		"E2B_SANDBOX=true\n", "E2B_SANDBOX_ID=sbx123\n", "E2B_TEMPLATE_ID=tmpl456\n",
		"E2B_EVENTS_ADDRESS=http://192.0.2.1\n", "FROM_CREATE=yes\n",
		"HOME=/home/user\n", "USER=user\n", "LOGNAME=user\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("environment lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasSuffix(r.stdout, "truesbx123tmpl456") {
		t.Errorf("/run/e2b files: output ends %q", r.stdout[max(0, len(r.stdout)-40):])
	}
}

// TestReboot checks what a cold boot does: processes end, files stay, the
// boot ID changes.
func TestReboot(t *testing.T) {
	d := newDaemon(t, Config{})
	before := run(t, d, "cat /proc/sys/kernel/random/boot_id").stdout
	if len(before) != 37 || strings.Count(before, "-") != 4 {
		t.Fatalf("boot_id %q is not a UUID line", before)
	}
	_, sub := start(t, d, bashReq("echo marker > /tmp/kept; sleep 60"))
	waitFor(t, func() bool { _, err := d.FS().ReadFile("/tmp/kept"); return err == nil })
	d.Reboot()
	if r := collect(t, sub); r.end.Status != "signal: killed" {
		t.Fatalf("a process across the reboot ended %+v", r.end)
	}
	after := run(t, d, "cat /proc/sys/kernel/random/boot_id /tmp/kept").stdout
	if after == before+"marker\n" || !strings.HasSuffix(after, "marker\n") {
		t.Fatalf("after the reboot: %q (before %q)", after, before)
	}
}
