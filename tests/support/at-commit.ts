/**
 * Work a test makes a transaction do when it commits, not before: a deferred constraint trigger
 * on `table`, run once per inserted row by COMMIT. How the tests hold a commit back (an advisory
 * lock) or refuse one (an exception) after the statement itself has been answered.
 */
import type { Queryable } from "../../functions/_shared/db/db.ts";

/**
 * Runs `body` (PL/pgSQL statements; `new` is the inserted row) at the commit of every insert into
 * `table`, until the returned `remove` is called. `name` names the trigger and its function.
 */
export async function atCommit(
  db: Queryable,
  { table, name, body }: { table: string; name: string; body: string },
): Promise<{ remove(): Promise<void> }> {
  await db.execScript(`
    create function ${name}() returns trigger language plpgsql as $$
      begin ${body} return null; end $$;
    create constraint trigger ${name} after insert on ${table}
      deferrable initially deferred for each row execute function ${name}();`);
  return {
    remove: () => db.execScript(`drop trigger ${name} on ${table}; drop function ${name}();`),
  };
}
