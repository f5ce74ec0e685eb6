-- What a creator's own token may read of its vault rows: the masked metadata, not the ciphertext,
-- IV or key id. Those tokens are valid at PostgREST when JWT_SECRET is the project's (as
-- docs/operations.md suggests), so a table-wide grant let a browser fetch its rows' ciphertext
-- (`/rest/v1/user_secrets?select=ciphertext`). Nothing needs it: the list reads type, time and
-- hint; reveal, writes and key rotation run as the functions' owner or service_role.
revoke select on public.user_secrets from authenticated;
grant select (user_id, secret_type, hint, created_at, updated_at) on public.user_secrets
  to authenticated;
