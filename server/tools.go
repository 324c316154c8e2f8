package server

// AllTools returns every tool of the contract, in a stable order: the single
// list read by registration, documentation and tests (TOOLS-1).
func AllTools(deps *Deps) []Tool {
	d := deps.withDefaults() // nil means every default
	return []Tool{
		// The original seven: execution and files.
		CreateSandbox(d),
		KillSandbox(d),
		RunCode(d),
		RunCommand(d),
		ReadFile(d),
		WriteFile(d),
		ListFiles(d),
		// Lifecycle.
		ListSandboxes(d),
		GetSandbox(d),
		SetSandboxTimeout(d),
		// Background commands.
		StartBackgroundCommand(d),
		GetBackgroundCommand(d),
		KillBackgroundCommand(d),
		// Binary transfer.
		UploadFile(d),
		DownloadFile(d),
	}
}
