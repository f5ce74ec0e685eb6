-- Identity and sessions: a creator per wallet, the sessions that sign-in opens, and their refresh
-- tokens. Every access token names its session, so sign-out and revocation take effect at once.

-- A creator is a key (an externally owned account: the same on every chain, chain_id null) or a
-- contract wallet on one chain (chain_id set). A contract address means nothing off its chain: the
-- same address elsewhere may be someone else's wallet, so a contract proven on a second chain is a
-- creator of its own; refusing it instead would let whoever proves an address first lock its owner
-- out on every other chain. Addresses are stored lowercase, the one canonical form.
create table public.wallet_users (
  id uuid primary key default gen_random_uuid(),
  wallet_address text not null check (wallet_address ~ '^0x[0-9a-f]{40}$'),
  created_at timestamptz not null default now(),
  last_sign_in_at timestamptz not null default now(),
  chain_id bigint check (chain_id is null or chain_id > 0),
  -- The kill switch: while set, every reveal of the creator's keys is refused.
  reveals_locked_at timestamptz,
  constraint wallet_users_identity_key unique nulls not distinct (wallet_address, chain_id)
);

-- A session never outlives expires_at (refreshing does not extend it).
create table public.auth_sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.wallet_users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('logout', 'refresh_token_reuse', 'admin')),
  -- What the client said it is, shown in the creator's sessions list.
  client_description text
    check (client_description is null
      or (char_length(client_description) between 1 and 160 and client_description ~ '^[ -~]+$')),
  refreshed_at timestamptz
);
create index auth_sessions_user_id_idx on public.auth_sessions (user_id);
create index auth_sessions_expires_at_idx on public.auth_sessions (expires_at);

-- Refresh tokens are stored only as SHA-256 hashes; each is usable once (rotation), and a second
-- use of a spent one revokes the whole session (theft detection). A refresh whose answer was lost
-- may be tried again: every try of one refresh carries a random retry key, whose hash the spent
-- token keeps, so a retry can be told from a copy of the token and answered with the same
-- successor.
create table public.auth_refresh_tokens (
  token_hash bytea primary key check (length(token_hash) = 32),
  session_id uuid not null references public.auth_sessions (id) on delete cascade,
  created_at timestamptz not null default now(),
  used_at timestamptz,
  retry_key_hash bytea
);
create index auth_refresh_tokens_session_id_idx on public.auth_refresh_tokens (session_id);

alter table public.wallet_users enable row level security;
alter table public.wallet_users force row level security;
alter table public.auth_sessions enable row level security;
alter table public.auth_sessions force row level security;
alter table public.auth_refresh_tokens enable row level security;
alter table public.auth_refresh_tokens force row level security;
revoke all on public.wallet_users, public.auth_sessions, public.auth_refresh_tokens
  from public, anon, authenticated;
grant all on public.wallet_users, public.auth_sessions, public.auth_refresh_tokens
  to service_role;

-- Whether `session_id` names an unrevoked, unexpired session of `user_id`: the one definition of a
-- live session, for the policies and every checked function. PL/pgSQL so each connection keeps the
-- query's plan (a SQL function with its own search_path is never inlined, so it would plan at every
-- call); security definer so it always runs as the owner, and one plan serves the service's role
-- and the policies' path alike.
create function public.session_is_live_for(session_id uuid, user_id uuid)
  returns boolean
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    return exists (
      select 1 from public.auth_sessions s
       where s.id = session_is_live_for.session_id and s.user_id = session_is_live_for.user_id
         and s.revoked_at is null and s.expires_at > now()
    );
  end
  $$;

-- Whether the caller's JWT claims name a live session of auth.uid(): what every row-level security
-- policy of a creator's rows requires. Security definer because `authenticated` cannot read
-- auth_sessions; a malformed session_id is simply not live.
create function public.session_is_live() returns boolean
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    claimed text := nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'session_id';
  begin
    if claimed is null
      or claimed !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      return false;
    end if;
    return public.session_is_live_for(claimed::uuid, auth.uid());
  end
  $$;

-- A refresh spends its token (used_at set once); the session notes when. A trigger, so the refresh
-- stays one statement; the WHEN clause keeps every other update of a token from calling it.
create function public.note_session_refresh() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    update public.auth_sessions s set refreshed_at = new.used_at where s.id = new.session_id;
    return null;
  end
  $$;
create trigger auth_refresh_tokens_note_refresh
  after update of used_at on public.auth_refresh_tokens
  for each row when (old.used_at is null and new.used_at is not null)
  execute function public.note_session_refresh();

-- A creator reads its own sessions (never another's) while its own session is live, and of them
-- only what the sessions list shows: not revoked_reason. The sub-selects make Postgres evaluate
-- each function once per statement, not once per row.
create policy auth_sessions_owner_read on public.auth_sessions
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));
grant select (id, user_id, created_at, expires_at, revoked_at, refreshed_at, client_description)
  on public.auth_sessions to authenticated;

-- The creator behind a live session: its wallet, chain (null for a key), since when, and whether
-- live-run access is locked. One row; live = false and nothing else when the session has ended.
create function public.creator_account(session_id uuid, user_id uuid)
  returns table (
    live boolean, wallet_address text, chain_id bigint, created_at timestamptz,
    reveals_locked_at timestamptz
  )
  language sql stable security definer set search_path = pg_catalog, pg_temp
  as $$
    select u.id is not null, u.wallet_address, u.chain_id, u.created_at, u.reveals_locked_at
      from (select 1) as one
      left join (public.auth_sessions s join public.wallet_users u on u.id = s.user_id)
        on s.id = creator_account.session_id and s.user_id = creator_account.user_id
       and s.revoked_at is null and s.expires_at > now()
  $$;

-- Turns the rest of the caller's transaction into the creator's under row-level security: the
-- claims auth.uid() reads, and the role `authenticated`. Returns the role to switch back to.
-- Security invoker, because a security definer function cannot switch role; the role and claims
-- are local to the caller's transaction, so a pooled connection passes nothing on.
create function public.act_as_creator(claims text) returns text
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  declare
    caller text := current_user;
  begin
    perform set_config('request.jwt.claims', act_as_creator.claims, true),
      set_config('role', 'authenticated', true);
    return caller;
  end
  $$;

-- The creator's live sessions, newest first, read as the creator under row-level security (the
-- policy above): no row means the caller's own session has ended, since a live one lists itself.
create function public.list_creator_sessions(claims text, user_id uuid)
  returns table (
    id uuid, created_at timestamptz, refreshed_at timestamptz, expires_at timestamptz,
    client_description text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  begin
    perform public.act_as_creator(list_creator_sessions.claims);
    return query
      select s.id, s.created_at, s.refreshed_at, s.expires_at, s.client_description
        from public.auth_sessions s
       where s.user_id = list_creator_sessions.user_id
         and s.revoked_at is null and s.expires_at > now()
       order by s.created_at desc, s.id;
  end
  $$;

-- session_is_live() runs inside `authenticated`'s policies, so it must be executable by it; the
-- rest are the service's alone. Supabase grants new functions to the API roles by default, so each
-- is revoked explicitly.
revoke all on function public.session_is_live() from public, anon;
grant execute on function public.session_is_live() to authenticated, service_role;
revoke all on function public.session_is_live_for(uuid, uuid) from public, anon, authenticated;
revoke all on function public.note_session_refresh() from public, anon, authenticated;
revoke all on function public.creator_account(uuid, uuid) from public, anon, authenticated;
revoke all on function public.list_creator_sessions(text, uuid) from public, anon, authenticated;
revoke all on function public.act_as_creator(text) from public, anon, authenticated;
grant execute on function public.act_as_creator(text) to service_role;
grant execute on function public.session_is_live_for(uuid, uuid) to service_role;
grant execute on function public.creator_account(uuid, uuid) to service_role;
grant execute on function public.list_creator_sessions(text, uuid) to service_role;
