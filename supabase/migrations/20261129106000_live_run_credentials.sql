-- Live-run credentials: one per live-run service, named, scoped to the secret types it may reveal,
-- with an optional expiry. Only a SHA-256 of each credential is stored: a credential is 214 random
-- bits, so a plain hash cannot be reversed, and a lookup by hash compares nothing in the open.
-- Operators manage them with `deno task credentials:*` (scripts/credentials.ts); the reveal
-- (20261129110100_reveal_retention.sql) checks the presented one in its own statement, so a
-- revocation holds from the next reveal.

create table public.live_run_credentials (
  id uuid primary key default gen_random_uuid(),
  -- 'legacy' is what the logs call SERVER_REVEAL_TOKEN (reveal.ts): never a row's name.
  name text not null check (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$' and name <> 'legacy'),
  secret_types text[] not null check (
    cardinality(secret_types) > 0 and array_ndims(secret_types) = 1
    and array_position(secret_types, null) is null
    and secret_types <@ array['provider_a_api_key', 'provider_a_org_id', 'provider_b_key',
      'provider_c_key', 'provider_d_key', 'provider_e_key', 'provider_f_api_key']::text[]
  ),
  token_hash bytea not null unique check (length(token_hash) = 32),
  created_at timestamptz not null default now(),
  -- A rotation sets the predecessor's expiry to the end of its grace period.
  expires_at timestamptz,
  revoked_at timestamptz,
  -- The credential this one succeeded (rotation); null for one added.
  rotated_from uuid references public.live_run_credentials (id) on delete set null
);
create index live_run_credentials_name_idx on public.live_run_credentials (name, created_at);

alter table public.live_run_credentials enable row level security;
alter table public.live_run_credentials force row level security;
revoke all on public.live_run_credentials from public, anon, authenticated;
grant all on public.live_run_credentials to service_role;

-- Each reveal event names the credential that made it (its name, never the credential); events
-- written before credentials existed have none and read as before. A reveal asking for a type
-- outside its credential's scope is refused as 'out_of_scope'.
alter table public.secret_events add column credential_name text;
alter table public.secret_events drop constraint secret_events_reason_check;
alter table public.secret_events add constraint secret_events_reason_check
  check (reason is null or (action = 'reveal_refused' and reason in ('vault_locked',
    'out_of_scope')));
