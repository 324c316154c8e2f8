package fakeprovider_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

func TestProvider_Canaries(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new, Canaries: true})
	a := f.create(map[string]any{"templateID": "base", "secure": true})
	b := f.create(map[string]any{"templateID": "base", "secure": true})
	dnsName := regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	canaries := f.p.Canaries()
	if canaries[0] != f.p.APIKey() {
		t.Errorf("Canaries()[0] = %q, want the API key", canaries[0])
	}

	var all []string
	for _, sb := range []map[string]any{a, b} {
		id := sb["sandboxID"].(string)
		rec, _ := f.p.Sandbox(id)
		values := map[string]string{
			"envdAccessToken":    sb["envdAccessToken"].(string),
			"trafficAccessToken": sb["trafficAccessToken"].(string),
			"domain":             sb["domain"].(string),
			"clientID":           sb["clientID"].(string),
			"metadata":           rec.Metadata[fakeprovider.CanaryMetadataKey],
			"envVars":            rec.EnvVars[fakeprovider.CanaryEnvVar],
		}
		for field, v := range values {
			c, ok := f.p.FindCanary(v)
			if !ok || !strings.HasPrefix(c, "canary") {
				t.Errorf("%s %q carries no issued canary", field, v)
			}
			if field == "clientID" && strings.Contains(v, "-") {
				t.Errorf("clientID %q has a dash: E2B SDK 1.x joins \"<id>-<clientID>\" and splits it again", v)
			}
			all = append(all, c)
		}
		if !dnsName.MatchString(values["domain"]) || !dnsName.MatchString("49983-"+id+"."+values["domain"]) {
			t.Errorf("domain %q is not a valid DNS name", values["domain"])
		}
		if d, _ := f.p.Domain(id); d != values["domain"] {
			t.Errorf("Domain(%s) = %q, want %q", id, d, values["domain"])
		}
		cfg := ds.get(id).cfg
		if cfg.AccessToken != values["envdAccessToken"] || cfg.EnvVars[fakeprovider.CanaryEnvVar] != values["envVars"] {
			t.Errorf("daemon config %+v does not carry the sandbox's secrets", cfg)
		}
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("canaries are not distinct: %v", all)
	}
	for _, c := range all {
		if !slices.Contains(f.p.Canaries(), c) {
			t.Errorf("Canaries() lacks %q", c)
		}
	}
	if _, ok := f.p.FindCanary("nothing to see " + strings.ToUpper("canary-nope")); ok {
		t.Error("FindCanary found a canary that was never issued")
	}
	if c, ok := f.p.FindCanary("log: X-API-Key=" + strings.ToUpper(f.p.APIKey())); !ok || c != f.p.APIKey() {
		t.Error("FindCanary missed the API key (case-insensitive)")
	}
}
