package server

import (
	"context"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Bounds of the file tools.
const (
	defaultListDepth = 1
	maxListDepth     = 10
	maxListEntries   = 10000
)

func pathArg(desc string) *jsonschema.Schema {
	return str(desc+" Relative paths resolve against the sandbox user's home.", maxPathLen, pathPattern)
}

// ReadFile is read_file (FILE-2, FILE-4): a UTF-8 text file's content.
func ReadFile(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("path", pathArg("The file to read.")),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	out := object("",
		req("path", &jsonschema.Schema{Type: "string", Description: "The path as given."}),
		req("content", &jsonschema.Schema{Type: "string", Description: "The file's text."}),
	)
	def := &mcp.Tool{
		Name: toolset.ReadFile,
		Description: "Read a UTF-8 text file from a sandbox. A file that is not valid UTF-8 or is larger than " +
			itoa(deps.Limits.ReadFileBytes) + " bytes is an error: use download_file for binary or large files. A missing " +
			"path is a not_found error. sandbox_id is required in a 2026-07-28 request; in a 2025 session, without it the session's default sandbox is used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, dataPlane{
		fileOp: true,
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			path := a.str("path")
			data, truncated, err := r.envd.ReadFile(ctx, path, int64(deps.Limits.ReadFileBytes))
			if err != nil {
				return nil, err
			}
			if truncated {
				return nil, &ToolError{Category: sandbox.InvalidArgument, Code: codeTooLarge, Field: "path", Recovery: hintUseDownload}
			}
			if !utf8.Valid(data) {
				return nil, &ToolError{Category: sandbox.InvalidArgument, Code: codeNotUTF8, Field: "path", Recovery: hintUseDownload}
			}
			return struct {
				Path    string `json:"path"`
				Content string `json:"content"`
			}{path, string(data)}, nil
		},
	}.handler(deps))
}

// WriteFile is write_file (FILE-1): UTF-8 text written to a file, creating
// parent directories and replacing an existing file.
func WriteFile(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("path", pathArg("The file to write.")),
		req("content", &jsonschema.Schema{Type: "string", MaxLength: ptr(deps.Limits.TransferBytes),
			Description: "The text to write (UTF-8), at most " + itoa(deps.Limits.TransferBytes) + " bytes."}),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	out := object("",
		req("path", &jsonschema.Schema{Type: "string", Description: "The path as given."}),
		req("bytes_written", &jsonschema.Schema{Type: "integer", Description: "Bytes written."}),
	)
	def := &mcp.Tool{
		Name: toolset.WriteFile,
		Description: "Write UTF-8 text to a file in a sandbox, creating parent directories and overwriting an existing " +
			"file. For binary data use upload_file. A 2026-07-28 request must pass sandbox_id; in a 2025 session, " +
			"without it the session's default sandbox is used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, dataPlane{
		check: func(_ *session, a args) error {
			if len(a.str("content")) > deps.Limits.TransferBytes {
				return &ToolError{Category: sandbox.InvalidArgument, Code: codeTooLarge, Field: "content", Recovery: sandbox.InvalidArgument.Recovery()}
			}
			return nil
		},
		fileOp: true,
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			path := a.str("path")
			info, err := r.envd.WriteText(ctx, path, a.str("content"))
			if err != nil {
				return nil, err
			}
			return struct {
				Path         string `json:"path"`
				BytesWritten int64  `json:"bytes_written"`
			}{path, info.Size}, nil
		},
	}.handler(deps))
}

// fileEntry is one entry of list_files (FILE-3).
type fileEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// ListFiles is list_files (FILE-3, FILE-4): a directory's entries down to a
// depth.
func ListFiles(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("path", pathArg("The directory to list.")),
		opt("depth", withDefault(integer("Levels to descend, 1 (the directory's own entries) to "+itoa(maxListDepth)+". Default 1.", 1, maxListDepth), defaultListDepth)),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	entry := object("",
		req("name", &jsonschema.Schema{Type: "string"}),
		req("path", &jsonschema.Schema{Type: "string", Description: "Absolute path."}),
		req("type", enum("", "file", "directory", "symlink")),
		req("size", &jsonschema.Schema{Type: "integer", Description: "Size in bytes."}),
	)
	out := object("",
		req("entries", &jsonschema.Schema{Type: "array", Items: entry}),
		req("truncated", &jsonschema.Schema{Type: "boolean", Description: "True when more than " + itoa(maxListEntries) + " entries were found and the rest left out."}),
	)
	def := &mcp.Tool{
		Name: toolset.ListFiles,
		Description: "List the entries of a directory in a sandbox (name, absolute path, type file/directory/symlink, " +
			"size), descending depth levels. A missing path is a not_found error. A 2026-07-28 request must pass sandbox_id; in a " +
			"2025 session, without it the session's default sandbox is used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, dataPlane{
		fileOp: true,
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			infos, err := r.envd.ListDir(ctx, a.str("path"), int(a.integer("depth", defaultListDepth)))
			if err != nil {
				return nil, err
			}
			entries := make([]fileEntry, 0, min(len(infos), maxListEntries))
			for _, e := range infos {
				if len(entries) == maxListEntries {
					break
				}
				typ := string(e.Type)
				if e.Type != sandbox.EntryDirectory && e.Type != sandbox.EntrySymlink {
					typ = string(sandbox.EntryFile)
				}
				entries = append(entries, fileEntry{Name: e.Name, Path: e.Path, Type: typ, Size: e.Size})
			}
			return struct {
				Entries   []fileEntry `json:"entries"`
				Truncated bool        `json:"truncated"`
			}{entries, len(infos) > maxListEntries}, nil
		},
	}.handler(deps))
}
