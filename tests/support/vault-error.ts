/** The VaultError `promise` rejects with; fails the test if it resolves or rejects otherwise. */
import assert from "node:assert/strict";
import { VaultError } from "../../sdk/src/errors.ts";

export async function rejects(promise: Promise<unknown>): Promise<VaultError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof VaultError, `expected a VaultError, got ${error}`);
    return error;
  }
  assert.fail("expected the call to fail");
}
