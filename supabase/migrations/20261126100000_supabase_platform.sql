-- What a Supabase project already provides, created here only where it is missing, so the same
-- migrations run unchanged on a Supabase project, a plain PostgreSQL server and embedded PGlite.
-- Plaintext secrets never reach this database: the vault holds AES-256-GCM ciphertext made in the
-- edge function, and the encryption key never appears in SQL.

create extension if not exists pgcrypto;

-- Supabase's API roles. Row-level security and grants below decide what each may reach.
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

-- auth.uid(): the caller's user id from its JWT claims, read the way Supabase reads it. Supabase
-- owns the auth schema and its own auth.uid(), which must not be replaced.
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
