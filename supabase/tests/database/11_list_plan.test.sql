-- The masked list's plan as `authenticated`, under row-level security: each secret's last use is
-- one primary-key lookup in secret_last_reveals, whatever the trail's length. The query explained
-- is the one public.list_user_secrets runs, read from its source, so a rewrite of the list is held
-- to the same plan, with enough rows that a scan would cost the planner more than the lookups.
begin;
create extension if not exists pgtap with schema extensions;
select plan(5);

insert into public.wallet_users (id, wallet_address)
  select ('f0000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
         '0xfa' || lpad(to_hex(g), 38, '0')
    from generate_series(1, 3000) g;
insert into public.auth_sessions (id, user_id, expires_at) values
  ('f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour');
insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
  select u.id, t, '\x0101010101010101010101010101010101'::bytea,
         '\x000000000000000000000000'::bytea, 'k1'
    from public.wallet_users u,
         unnest(array['provider_a_api_key', 'provider_a_org_id', 'provider_b_key',
           'provider_c_key', 'provider_d_key', 'provider_e_key', 'provider_f_api_key']) t
   where u.id::text like 'f0000000-0000-4000-8000-%';
-- Every key of every creator revealed once, and 20,000 more reveals of the one creator.
insert into public.secret_events (user_id, secret_types, action, occurred_at)
  select s.user_id, array_agg(s.secret_type order by s.secret_type), 'reveal',
         now() + interval '1 second'
    from public.user_secrets s join public.wallet_users u on u.id = s.user_id
   where u.id::text like 'f0000000-0000-4000-8000-%'
   group by s.user_id;
insert into public.secret_events (user_id, secret_types, action, occurred_at)
  select 'f0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal',
         now() - make_interval(secs => g)
    from generate_series(1, 20000) g;
analyze public.wallet_users, public.auth_sessions, public.user_secrets,
  public.secret_last_reveals, public.secret_events;

-- EXPLAIN of the list's own query, with the creator's values in place of its parameters, run in
-- the creator's role and claims as the list runs it.
create function pg_temp.list_plan(creator uuid, claims text) returns text
  language plpgsql as $$
  declare
    source text := (select p.prosrc from pg_proc p
      where p.oid = 'public.list_user_secrets(text, uuid, uuid, text[])'::regprocedure);
    query text := substring(source from 'return query\s+(select true[^;]*);');
    caller text := current_user;
    plan text;
  begin
    if query is null then
      return null;
    end if;
    query := replace(query, 'list_user_secrets.user_id', quote_literal(creator) || '::uuid');
    query := replace(query, 'list_user_secrets.secret_types',
      quote_literal(array['provider_a_api_key', 'provider_b_key']::text[]) || '::text[]');
    perform set_config('request.jwt.claims', claims, true);
    perform set_config('role', 'authenticated', true);
    execute 'explain (format json, verbose) ' || query into plan;
    perform set_config('role', caller, true);
    return plan;
  end
  $$;
create temporary table list_plan as
  select pg_temp.list_plan('f0000000-0000-4000-8000-000000000001',
    '{"sub":"f0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"f0000000-0000-4000-8000-0000000000f1"}'
  ) as plan;

select isnt((select plan from list_plan), null,
  'the list''s query is found in public.list_user_secrets and explained');
select ok((select plan like '%session_is_live%' from list_plan),
  'the plan is the creator''s, under the policies');
select ok((select plan like '%"Index Name": "secret_last_reveals_pkey"%' from list_plan),
  'each secret''s last use is a primary-key lookup in secret_last_reveals');
select ok((select plan like '%"Index Name": "user_secrets_pkey"%' from list_plan),
  'the creator''s secrets are read through their primary key');
select ok((select plan not like '%"Seq Scan"%' and plan not like '%secret_events%' from list_plan),
  'no table is scanned whole, and the trail is not read at all');

select * from finish();
rollback;
