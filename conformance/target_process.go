package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A run against the in-process reference server can still check what only
// a server process shows (a Process spec): the crash and restart sweep
// (SESSION-4), SIGTERM at shutdown, and provider connections that are the
// server's own rather than the kit's (GET-6, TIMEOUT-6). Given the
// reference server's command (RunOptions.ProcessCommand: "sandboxkit
// conform" re-runs its own binary as "serve"), the run starts it as a stdio
// server command for those specs, on the same fake, and every other spec
// stays in-process. The banner says which specs ran where.

// startProcess prepares the process target of an in-process run that was
// given the reference server's command; env is the fake's location.
func (r *runState) startProcess(ctx context.Context, env []string) error {
	if len(r.processCmd) == 0 || r.cfg.Kind() != TargetInProcess || r.cfg.Cloud {
		return nil
	}
	pcfg := *r.cfg
	pcfg.ServerCommand = slices.Clone(r.processCmd)
	pcfg.ServerEnv = nil
	st := &stdioTarget{cfg: &pcfg, env: env, settle: r.settleTime}
	if err := st.start(ctx); err != nil {
		return fmt.Errorf("conformance: the reference server's command for the specs that need a process: %w", err)
	}
	r.process = st
	return nil
}

// targetOf is the target a spec reaches: the process target for a Process
// spec when the run has one, the run's target otherwise.
func (r *runState) targetOf(spec Spec) target {
	if spec.Process && r.process != nil {
		return r.process
	}
	return r.target
}

// processSpecIDs are the IDs of the catalog's Process specs.
func processSpecIDs() []string {
	var ids []string
	for _, s := range Specs() {
		if s.Process {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// processBanner is the banner's line on where the Process specs of an
// in-process run ran, or "" for other runs.
func (r *runState) processBanner() string {
	if r.cfg.Kind() != TargetInProcess || r.cfg.Cloud {
		return ""
	}
	ids := strings.Join(processSpecIDs(), ", ")
	if r.process == nil {
		return fmt.Sprintf("  process  none: %s run in-process where they can, and the crash spec is skipped\n", ids)
	}
	return fmt.Sprintf("  process  %s run against the reference server as a stdio command: %s\n",
		ids, strings.Join(r.processCmd, " "))
}
