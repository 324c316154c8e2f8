// Assertions on tool results as any official MCP client returns them: a
// success carries structuredContent and the same JSON in its one text block
// (TOOLS-3), a tool error carries the contract's error JSON (ERR-1, ERR-2),
// and nothing comes back as a thrown error. Shared by mcp/ and mcp2/, whose
// clients differ but whose results have one shape.
import assert from 'node:assert/strict';

// The fixed error categories (ERR-2).
export const CATEGORIES = ['invalid_argument', 'not_found', 'unauthenticated', 'permission_denied', 'conflict',
  'rate_limited', 'timeout', 'unavailable', 'provider_error', 'internal'];

// The members an error object may have (ERR-2).
const ERROR_MEMBERS = ['category', 'http_status', 'code', 'field', 'recovery'];

/**
 * The result checks for one client. `label` names the client in failure
 * messages ("the official client", "the official client v2").
 */
export function resultChecks(label) {
  /** Calls a tool; a thrown error fails the check. */
  async function call(client, name, args) {
    try {
      return await client.callTool({ name, arguments: args });
    } catch (err) {
      assert.fail(`${name}(${JSON.stringify(args)}): ${label} threw instead of returning a result: ${err.message}`);
    }
  }

  /** A success (TOOLS-3): structuredContent, and the same JSON in the text. */
  async function ok(client, name, args) {
    const result = await call(client, name, args);
    assert.notEqual(result.isError, true, `${name}(${JSON.stringify(args)}): unexpected tool error ${JSON.stringify(result.content)}`);
    assert.equal(typeof result.structuredContent, 'object', `${name}: no structuredContent`);
    const fromText = JSON.parse(textOf(name, result));
    let expected = result.structuredContent;
    if (name === 'download_file' && !('data_base64' in fromText)) {
      // TOOLS-3: an inline download's text leaves out data_base64, which
      // travels once, in structuredContent.
      const { data_base64: _bytes, ...rest } = expected;
      expected = rest;
    }
    assert.deepEqual(fromText, expected, `${name}: text block differs from structuredContent`);
    return result.structuredContent;
  }

  /**
   * A readable tool error (ERR-1, ERR-2): isError, no structuredContent, and
   * the error JSON in the text block, where a model reads the category and the
   * hint, with the category, field and code wanted.
   */
  async function fails(client, name, args, category, { field, code } = {}) {
    const result = await call(client, name, args);
    const what = `${name}(${JSON.stringify(args)})`;
    assert.equal(result.isError, true, `${what}: want a tool error, got ${JSON.stringify(result)}`);
    assert.equal(result.structuredContent, undefined, `${what}: a tool error carries structuredContent`);
    const { error, ...rest } = JSON.parse(textOf(name, result));
    assert.deepEqual(rest, {}, `${what}: the text block holds more than {"error": {...}}`);
    assert.ok(CATEGORIES.includes(error.category), `${what}: category ${error.category} is not one of the fixed set`);
    assert.equal(error.category, category, `${what}: category`);
    assert.ok(typeof error.recovery === 'string' && error.recovery.length > 0, `${what}: no recovery hint`);
    for (const k of Object.keys(error)) {
      assert.ok(ERROR_MEMBERS.includes(k), `${what}: error member ${k} outside ERR-2`);
    }
    if (field !== undefined) assert.equal(error.field, field, `${what}: field`);
    if (code !== undefined) assert.equal(error.code, code, `${what}: code`);
    return error;
  }

  return { call, ok, fails };
}

/** The text of a result's one text block. */
export function textOf(name, result) {
  const texts = result.content.filter((c) => c.type === 'text');
  assert.equal(texts.length, 1, `${name}: want one text block, got ${JSON.stringify(result.content)}`);
  return texts[0].text;
}
