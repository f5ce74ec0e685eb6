-- Wallet sign-in and provider secret vault: the whole schema.
-- Applied unchanged to embedded PGlite, a plain PostgreSQL 15 server and a Supabase project.
-- Plaintext secrets never reach this database: user_secrets holds AES-256-GCM ciphertext made in
-- the edge function, and the encryption key never appears in SQL.

create extension if not exists pgcrypto;

-- Supabase's API roles. A Supabase project already has them; a plain server gets them here.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

-- auth.uid() reads the caller's JWT claims the way Supabase does. Supabase already defines it (and
-- owns the auth schema), so it is created only where it is missing.
create schema if not exists auth;
do $$
begin
  if not exists (
    select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'auth' and p.proname = 'uid'
  ) then
    create function auth.uid() returns uuid
      language sql stable
      as $fn$
        select nullif(
          coalesce(
            nullif(current_setting('request.jwt.claim.sub', true), ''),
            nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
          ),
          ''
        )::uuid
      $fn$;
    grant usage on schema auth to anon, authenticated, service_role;
    grant execute on function auth.uid() to anon, authenticated, service_role;
  end if;
end
$$;

-- Identity: one user per wallet. Addresses are stored lowercase, the one canonical form.
create table public.wallet_users (
  id uuid primary key default gen_random_uuid(),
  wallet_address text not null unique check (wallet_address ~ '^0x[0-9a-f]{40}$'),
  created_at timestamptz not null default now(),
  last_sign_in_at timestamptz not null default now()
);

-- The nonce-use record (spec part 2): issued by the server, consumed once by an atomic update.
create table public.auth_nonces (
  nonce text primary key check (nonce ~ '^[A-Za-z0-9]{16,64}$'),
  issued_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  used_by uuid references public.wallet_users (id) on delete set null
);
create index auth_nonces_expires_at_idx on public.auth_nonces (expires_at);

-- Sessions make sign-out and revocation immediate: every access token names its session.
create table public.auth_sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.wallet_users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('logout', 'refresh_token_reuse', 'admin'))
);
create index auth_sessions_user_id_idx on public.auth_sessions (user_id);

-- Refresh tokens are stored only as SHA-256 hashes; each is usable once (rotation), and a second
-- use of a spent one revokes the whole session (theft detection).
create table public.auth_refresh_tokens (
  token_hash bytea primary key check (length(token_hash) = 32),
  session_id uuid not null references public.auth_sessions (id) on delete cascade,
  created_at timestamptz not null default now(),
  used_at timestamptz
);
create index auth_refresh_tokens_session_id_idx on public.auth_refresh_tokens (session_id);

-- Fixed-window counters, kept here so limits hold across every function instance.
create table public.rate_limit_windows (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null default 1,
  primary key (bucket, window_start)
);

-- The vault: one row per creator and secret type, ciphertext only.
create table public.user_secrets (
  user_id uuid not null default auth.uid() references public.wallet_users (id) on delete cascade,
  secret_type text not null check (secret_type in (
    'provider_a_api_key', 'provider_a_org_id', 'provider_b_key', 'provider_c_key',
    'provider_d_key', 'provider_e_key', 'provider_f_api_key'
  )),
  ciphertext bytea not null check (length(ciphertext) >= 16),
  iv bytea not null check (length(iv) = 12),
  key_id text not null check (key_id ~ '^[A-Za-z0-9_-]{1,32}$'),
  -- "…" and the last four characters, only for values of 16 characters or more.
  hint text check (hint is null or char_length(hint) = 5),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (user_id, secret_type)
);
create index user_secrets_key_id_idx on public.user_secrets (key_id);

-- Audit trail: who, which type, what action, when. Never a value.
create table public.secret_events (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.wallet_users (id) on delete cascade,
  secret_type text not null,
  action text not null check (action in ('put', 'delete', 'reveal', 'rotate')),
  occurred_at timestamptz not null default now()
);
create index secret_events_user_id_idx on public.secret_events (user_id, occurred_at);

-- Writes and deletes are audited by the database itself, so no code path can forget to.
-- A key rotation re-encrypts without moving updated_at, which tells it apart from a creator's put.
create function public.audit_user_secret_change() returns trigger
  language plpgsql security definer set search_path = public, pg_temp
  as $$
  begin
    if tg_op = 'DELETE' then
      insert into public.secret_events (user_id, secret_type, action)
        values (old.user_id, old.secret_type, 'delete');
      return old;
    end if;
    insert into public.secret_events (user_id, secret_type, action)
      values (
        new.user_id, new.secret_type,
        case when tg_op = 'UPDATE' and new.updated_at = old.updated_at then 'rotate' else 'put' end
      );
    return new;
  end
  $$;
create trigger user_secrets_audit
  after insert or update or delete on public.user_secrets
  for each row execute function public.audit_user_secret_change();

-- Reveals are audited through this function only, so a creator can record its own reveal and
-- nothing else (it cannot write arbitrary events).
create function public.record_secret_reveal(secret_types text[]) returns void
  language sql security definer set search_path = public, pg_temp
  as $$
    insert into public.secret_events (user_id, secret_type, action)
      select auth.uid(), t, 'reveal' from unnest(secret_types) as t where auth.uid() is not null
  $$;

-- Row-level security, enabled and forced on every table. The API roles see nothing by default;
-- a creator (role authenticated, claims.sub = user id) reaches only its own secrets and events.
alter table public.wallet_users enable row level security;
alter table public.wallet_users force row level security;
alter table public.auth_nonces enable row level security;
alter table public.auth_nonces force row level security;
alter table public.auth_sessions enable row level security;
alter table public.auth_sessions force row level security;
alter table public.auth_refresh_tokens enable row level security;
alter table public.auth_refresh_tokens force row level security;
alter table public.rate_limit_windows enable row level security;
alter table public.rate_limit_windows force row level security;
alter table public.user_secrets enable row level security;
alter table public.user_secrets force row level security;
alter table public.secret_events enable row level security;
alter table public.secret_events force row level security;

revoke all on public.wallet_users, public.auth_nonces, public.auth_sessions,
  public.auth_refresh_tokens, public.rate_limit_windows, public.user_secrets, public.secret_events
  from public, anon, authenticated;
revoke all on function public.audit_user_secret_change() from public, anon, authenticated;
revoke all on function public.record_secret_reveal(text[]) from public, anon;

grant select, insert, update, delete on public.user_secrets to authenticated;
create policy user_secrets_owner on public.user_secrets
  for all to authenticated
  using (user_id = auth.uid())
  with check (user_id = auth.uid());

grant select on public.secret_events to authenticated;
create policy secret_events_owner_read on public.secret_events
  for select to authenticated
  using (user_id = auth.uid());

grant execute on function public.record_secret_reveal(text[]) to authenticated;

grant all on public.wallet_users, public.auth_nonces, public.auth_sessions,
  public.auth_refresh_tokens, public.rate_limit_windows, public.user_secrets, public.secret_events
  to service_role;
